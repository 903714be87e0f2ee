//! The `whole` protocol: the model is shown the repository's files as they are (no line
//! numbers) and changes a file by writing its path and then its complete new content in a
//! fenced block, as aider's "whole" edit format asks; the other actions stay verb lines. Small
//! coder models edit this way far more reliably than they copy SEARCH lines (aider's
//! leaderboard; our bench in benches/README.md).
//!
//! This module holds what differs from the text protocol: the system prompt, the first
//! message, and turning a finished reply into proposals ([`decode`]). The loop is the same.

use std::collections::BTreeSet;
use std::fmt::Write;

use codec::registry::{
    BUILTINS, EXAMPLE_REPLACE, EXAMPLE_SEARCH, WHOLE_EXAMPLE_CONTENT, WHOLE_EXAMPLE_PATH,
};
use codec::text::whole::{Piece, split_known};
use codec::{Action, ActionProposal, FormatId, Mode, Registry, TurnDecoder};

use crate::act::Observation;
use crate::context::{Relevant, relevant_files, repository_files, repository_map};
use crate::policy::ApprovalMode;
use crate::workspace::Workspace;

/// Characters of the first message's files by default: the whole protocol shows files whole,
/// so it needs more room than the text protocol's excerpts.
pub const DEFAULT_CONTEXT_BUDGET: usize = 10_000;

/// The malformed kind of a whole-file block that leaves code out (`# ... rest unchanged`).
pub const ELIDED: &str = "elided_file";

/// The malformed kind of a whole-file block that holds a diff of the file (`+`/`-` lines, as
/// the observation of a change shows it) or the tool output's own markers, not its content.
/// Small models copy the diff they were shown; written, it would break the file.
pub const DIFF: &str = "diff_in_file";

/// The summary of the DONE a reply implies when it writes every file back unchanged after
/// the session's change (the loop, `run`): the model's answer that its change stands.
pub const SETTLED: &str = "implied: the reply wrote its files back unchanged after the change";

/// The hint of a change in this protocol when no check runs after it.
pub const AFTER_CHANGE: &str = "if the task is finished now, reply DONE; if not, write each \
     file that still needs a change";

/// The malformed kind of a code block headed by a bare word that is no file of the
/// repository (`docs` above the content of `docs/index.md`): nothing is written, and the
/// model is told to name the file.
pub const HEADLESS: &str = "block_without_path";

/// The malformed kind of a reply whose only code is a fenced block with no path line above
/// it that holds a file's definitions exactly as the file has them (the 1.5B, after its
/// change, showed the changed function again and again): nothing to write, and the model is
/// told that nothing changed rather than where the path goes.
pub const SAME_BLOCK: &str = "block_as_file_has_it";

/// The malformed kind of a reply whose only code is fenced blocks with no path line above
/// them (prose, or nothing, right above the fence): nothing is written, and the model is told
/// where the path goes. The kept journals of both coder models hold 216 replies with a fence
/// among 447 that acted on nothing: a block after "Here is the updated content:", or the path
/// named in a sentence after it.
pub const UNNAMED: &str = "block_without_path_line";

/// The system prompt for `mode` in the whole protocol.
pub fn system_prompt(mode: ApprovalMode) -> String {
    let tools = mode.tools();
    let mut s = String::from(
        "You are an expert software developer working inside a repository. You are given a \
         task and the repository's files.\n",
    );
    if tools.contains(&"create") {
        s.push_str(
            "To change a file, write its path on a line by itself, then a fenced code block \
             with the file's complete new content: every line of the file, also the lines you \
             do not change. Never leave code out and never write placeholders like \
             `# ... rest of the code`. Create a new file the same way.\n\
             Example:\n",
        );
        let _ = writeln!(
            s,
            "{WHOLE_EXAMPLE_PATH}\n```python\n{WHOLE_EXAMPLE_CONTENT}```"
        );
    }
    s.push_str("Other commands, each on a line of its own:\n");
    for t in BUILTINS
        .iter()
        .filter(|t| tools.contains(&t.name) && !matches!(t.name, "edit" | "create"))
    {
        let _ = writeln!(s, "{}  {}", t.syntax, t.hint);
    }
    if mode == ApprovalMode::Plan {
        s.push_str("This session is read-only: you can look, not change anything.\n");
    } else {
        s.push_str(
            "Your files are written and your commands run after your reply, and you are told \
             what happened. Write DONE only once the task is finished; it is accepted only \
             once the repository has changed.\n",
        );
    }
    s.push_str("Quote a path with spaces in single quotes.");
    if tools.contains(&"run") {
        s.push_str(" RUN takes shell quoting, but no shell runs it.");
    }
    s.push('\n');
    s.push_str(crate::observe::UNTRUSTED_NOTE);
    s
}

/// The first user message. One message (`apart == false`): the task, the repository map,
/// the files as they are — those the task points at first ([`relevant_files`]), then the
/// rest, smallest first — each whole within `budget` characters (those left out named), and
/// the task again with what to reply. `apart`: the map and the files, a [`TURN_BREAK`], then
/// the task alone; [`History`](crate::history::History) sends the halves as two user messages
/// with an assistant's acknowledgement between, as aider does. On the agent suite the two
/// layouts solve about as many tasks, but not the same ones (benches/README.md, "the first
/// message"), so attempts alternate them.
pub fn task_message(ws: &Workspace, task: &str, budget: usize, layout: Layout) -> String {
    let (files, long) = files_and_map(ws, task, budget, layout.focus, layout.long);
    let closing = if layout.apart {
        "Reply with only the files you change or create, each with the change made: its path \
         on a line by itself, then its complete new content in a fenced code block. Do not \
         write out a file you leave as it is."
    } else {
        "Reply with each file you change or create: its path on a line by itself, then its \
         complete new content in a fenced code block."
    };
    let mut closing = layout.closing(closing);
    for by in LongEdit::ALL {
        let paths: Vec<&str> = long
            .iter()
            .filter(|(_, b)| *b == by)
            .map(|(p, _)| p.as_str())
            .collect();
        if !paths.is_empty() {
            let _ = write!(
                closing,
                " For {}, write {} as said above instead.",
                paths.join(", "),
                match by {
                    LongEdit::Blocks => "edit blocks",
                    LongEdit::Definitions => "only the functions you change",
                }
            );
        }
    }
    if !layout.apart {
        return one_message(task, &files, &closing);
    }
    format!("{}{TURN_BREAK}{task}\n{closing}", files.trim_end())
}

/// Where a first message splits into the files (a user message), an assistant's
/// [`ACKNOWLEDGEMENT`], and the task (a user message). Never shown to the model; journals
/// keep the first message with it, so a resume splits it the same way.
pub const TURN_BREAK: &str = "\n\u{1e}\n";

/// The assistant's turn between the files and the task.
pub const ACKNOWLEDGEMENT: &str = "Ok, I have the files. What should I do?";

/// The files as they are, then the task again and `closing`: the first message of the
/// protocols that show files unnumbered.
pub fn files_message(ws: &Workspace, task: &str, budget: usize, closing: &str) -> String {
    let (files, _) = files_and_map(ws, task, budget, false, None);
    one_message(task, &files, closing)
}

/// The task, the files, then the task again last, where a small model's attention is, with
/// what to reply.
fn one_message(task: &str, files: &str, closing: &str) -> String {
    format!("Task: {task}\n\n{files}\nThe task again: {task}\n{closing}")
}

/// How the first message lays the files out ([`crate::Config::layout`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// The files, an acknowledgement, then the task as a message of its own.
    pub apart: bool,
    /// Only the files the task points at shown whole, sources before tests.
    pub focus: bool,
    /// Ask for the change in words before the files ([`SAY_FIRST`]).
    pub say_first: bool,
    /// How a file shown with more lines than [`LongFiles::over`] is to be changed, rather
    /// than written whole ([`crate::Config::long_files`]); `None`: every file is written whole.
    pub long: Option<LongFiles>,
}

/// How the first message asks for a long file's change ([`Layout::long`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongFiles {
    /// Lines: a file with more is long.
    pub over: usize,
    pub by: LongEdit,
}

/// What a long file's change is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongEdit {
    /// SEARCH/REPLACE blocks under the path, decoded and applied as the text protocol's.
    Blocks,
    /// Only the definitions changed, under the path, spliced into the file
    /// ([`crate::splice`]); a file the splice cannot read (not Python or shell) gets
    /// [`LongEdit::Blocks`].
    Definitions,
}

impl LongEdit {
    pub const ALL: [LongEdit; 2] = [LongEdit::Blocks, LongEdit::Definitions];

    pub const fn as_str(self) -> &'static str {
        match self {
            LongEdit::Blocks => "blocks",
            LongEdit::Definitions => "definitions",
        }
    }

    pub fn parse(s: &str) -> Option<LongEdit> {
        LongEdit::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// What `path`'s change is written as: definitions only where the splice reads the
    /// file's language.
    fn for_path(self, path: &str) -> LongEdit {
        if crate::splice::reads(path) {
            self
        } else {
            LongEdit::Blocks
        }
    }
}

/// What the first message asks for before any file, with [`Layout::say_first`]: the change
/// named in words, as aider's whole-file prompt asks before the files. A model that must
/// say what is wrong first writes the file with that change, where one asked only for the
/// file often writes it back as it was.
pub const SAY_FIRST: &str = "First say in one or two sentences what is wrong and what you will \
     change, then write the files. ";

impl Layout {
    /// `closing` (what to reply), after [`SAY_FIRST`] where the layout asks for it.
    pub fn closing(&self, closing: &str) -> String {
        if self.say_first {
            format!("{SAY_FIRST}{closing}")
        } else {
            closing.to_owned()
        }
    }
}

/// The repository map, the files shown whole within `budget`, and the names of those left
/// out. `focus`: only the files the task points at ([`crate::context::focused`]), when it
/// points at any. The files shown with more lines than `long` allows are followed by how to
/// change them ([`long_files_note`]); they are returned with how.
fn files_and_map(
    ws: &Workspace,
    task: &str,
    budget: usize,
    focus: bool,
    long_files: Option<LongFiles>,
) -> (String, Vec<(String, LongEdit)>) {
    let files = repository_files(ws);
    let mut relevant = relevant_files(task, &files);
    let focused = focus && crate::context::focus(&mut relevant);
    let map = repository_map(&files, budget / 5);
    let mut order: Vec<(&str, &str)> = Vec::new();
    let text_of = |p: &str| {
        files
            .iter()
            .find(|(f, _, _)| f == p)
            .and_then(|(_, t, _)| t.as_deref())
    };
    for Relevant { path, .. } in &relevant {
        if let Some(t) = text_of(path) {
            order.push((path, t));
        }
    }
    let mut rest: Vec<(&str, &str)> = files
        .iter()
        .filter(|(p, _, _)| !order.iter().any(|(o, _)| o == p))
        .filter_map(|(p, t, _)| t.as_deref().map(|t| (p.as_str(), t)))
        .collect();
    rest.sort_by_key(|(p, t)| (t.len(), *p));
    let mut shown = String::new();
    let mut left_out: Vec<&str> = Vec::new();
    if focused {
        left_out.extend(rest.iter().map(|(p, _)| *p));
    } else {
        order.extend(rest);
    }
    let room = budget.saturating_sub(map.len());
    let mut long: Vec<(String, LongEdit)> = Vec::new();
    for (path, text) in order {
        let block = fenced(path, text);
        if shown.len() + block.len() <= room {
            shown.push_str(&block);
            if let Some(l) = long_files.filter(|l| text.lines().count() > l.over) {
                long.push((path.to_owned(), l.by.for_path(path)));
            }
        } else {
            left_out.push(path);
        }
    }
    let mut s = map;
    // The files left out are named before the files shown, not last: a small model writes
    // the path it read last before the task, and wrote a file it was never shown in half of
    // the focused first replies of the harder suite (sync.py in backoff-cap, every time).
    if !left_out.is_empty() {
        let _ = writeln!(
            s,
            "Not shown below (READ them if you need them): {}",
            left_out.join(", ")
        );
    }
    if !shown.is_empty() {
        s.push_str("\nThe files, as they are now:\n\n");
        s.push_str(&shown);
    }
    s.push_str(&long_files_note(&long));
    (s, long)
}

/// How to change each long file shown: by [`definitions_note`] or [`edit_blocks_note`], as
/// `long` says.
fn long_files_note(long: &[(String, LongEdit)]) -> String {
    let of = |by: LongEdit| -> Vec<String> {
        long.iter()
            .filter(|(_, b)| *b == by)
            .map(|(p, _)| p.clone())
            .collect()
    };
    let mut s = String::new();
    let defs = of(LongEdit::Definitions);
    if !defs.is_empty() {
        s.push_str(&definitions_note(&defs));
    }
    let blocks = of(LongEdit::Blocks);
    if let Some(first) = blocks.first() {
        s.push_str(&edit_blocks_note(&blocks, first));
    }
    s
}

/// How to change long files (`long`) by writing only the definitions that change: a block
/// that leaves definitions out is spliced into its file ([`crate::splice`]), the rest kept as
/// it is. A small model asked for one function's fix writes that function whole and well
/// (the splice's own finding); asked for edit blocks, it copies lines that are not in the file.
pub fn definitions_note(long: &[String]) -> String {
    let (those, are) = if long.len() == 1 {
        (long[0].clone(), "is")
    } else {
        (long.join(", "), "are")
    };
    format!(
        "\n{those} {are} long: do not write {} whole. Under the path, write only the functions \
         you change or add, each complete; every function you leave out stays in the file as \
         it is.\n",
        if long.len() == 1 { "it" } else { "them" },
    )
}

/// How to change long files (`long`, each over [`LongFiles::over`] lines) with edit
/// blocks, shown on `example`. Written whole, a file of a hundred lines costs a reply of
/// about a thousand tokens, which the reply limit cuts (the issue that asked for this saw a
/// 77-line file cut on five of eight turns); an edit block costs the lines it changes. The
/// blocks are decoded by the text protocol's decoder and applied with its repairs (markers
/// miscounted, SEARCH lines that differ in indentation or trailing space).
pub fn edit_blocks_note(long: &[String], example: &str) -> String {
    let (those, are) = if long.len() == 1 {
        (long[0].clone(), "is")
    } else {
        (long.join(", "), "are")
    };
    format!(
        "\n{those} {are} long: do not write {} whole. Change {} with edit blocks: the \
         path on a line by itself, then a fence holding one or more blocks like this one:\n\
         {example}\n```\n<<<<<<< SEARCH\n{EXAMPLE_SEARCH}=======\n{EXAMPLE_REPLACE}>>>>>>> \
         REPLACE\n```\nThe SEARCH lines are copied exactly from the file, a few lines around \
         the change; every other line stays as it is.\n",
        if long.len() == 1 { "it" } else { "them" },
        if long.len() == 1 { "it" } else { "each" },
    )
}

/// What a [`functions_message`] is given to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown<'n> {
    /// The functions the task's wrong command runs.
    Traced,
    /// The one where its value first goes wrong ([`crate::origin`]), named in the message.
    Origin,
    /// That one, named so, without its body, to be written anew ([`crate::Config::anew`]).
    OriginAnew(&'n str),
}

/// At most this many functions make a [`functions_message`]; a command that runs more has
/// not narrowed the search enough to leave the rest of its files out.
pub const MAX_SHOWN_FUNCTIONS: usize = 6;

/// A first message that shows, of the repository's code, only the functions the task's wrong
/// command runs ([`crate::trace`]), each in its file with the file's other statements
/// (imports, constants, the main guard) and without the file's other definitions
/// ([`crate::splice::subset`]). The 1.5B shown four whole files for backoff-cap wrote all four
/// back unchanged, turn after turn; shown the one function `delays` it has one thing to change.
/// A block written back from what is shown is spliced into the file, so the definitions left
/// out stay as they are (and, never shown, are not taken from a block: [`Partial`]).
///
/// [`Shown::Origin`]: `traced` holds the one function where the command's value first goes wrong
/// ([`crate::origin`]), named in the message's sentence above: no repository map, nothing
/// else named (the 1.5B shown the map above notice-wrap's `wrap` wrote the map's lines back as
/// notice.py).
///
/// `None` (the caller shows files) when nothing was traced, the command runs more than
/// [`MAX_SHOWN_FUNCTIONS`] functions of files the session may change, or none: test files and
/// `protected` (the check's files) are never shown this way. Returns the message and the
/// definitions left out, by file.
pub fn functions_message(
    ws: &Workspace,
    task: &str,
    budget: usize,
    layout: Layout,
    traced: &[crate::trace::Traced],
    protected: &[String],
    shown_as: Shown<'_>,
) -> Option<(String, Partial)> {
    let (bare, anew) = match shown_as {
        Shown::Traced => (false, None),
        Shown::Origin => (true, None),
        Shown::OriginAnew(name) => (true, Some(name)),
    };
    let mut by_file: Vec<(String, Vec<String>)> = Vec::new();
    let mut count = 0;
    for crate::trace::Function {
        path,
        name: function,
        ..
    } in traced.iter().flat_map(|t| &t.functions)
    {
        let test = crate::probe::is_test(&["python3".to_owned(), path.clone()]);
        let code = [".py", ".sh", ".bash"].iter().any(|e| path.ends_with(e));
        if test || protected.contains(path) || !code {
            continue;
        }
        match by_file.iter_mut().find(|(p, _)| p == path) {
            Some((_, names)) if names.contains(function) => continue,
            Some((_, names)) => names.push(function.clone()),
            None => by_file.push((path.clone(), vec![function.clone()])),
        }
        count += 1;
    }
    if count == 0 || count > MAX_SHOWN_FUNCTIONS {
        return None;
    }
    let files = repository_files(ws);
    let map = repository_map(&files, budget / 5);
    let mut shown = String::new();
    let mut partial = Partial::default();
    let mut written_anew: Option<&str> = None;
    for (path, names) in &by_file {
        let text = files
            .iter()
            .find(|(p, _, _)| p == path)
            .and_then(|(_, t, _)| t.as_deref())?;
        let (mut subset, left_out) = crate::splice::subset(path, text, names)?;
        // Without its body where it has a docstring to stand under; else shown as it is.
        if let Some(name) = anew.filter(|n| names.iter().any(|m| m == n))
            && let Some(bodiless) = crate::splice::without_body(path, &subset, name)
        {
            subset = bodiless;
            written_anew = Some(name);
        }
        shown.push_str(&fenced(path, &subset));
        if !left_out.is_empty() {
            partial.0.push((path.clone(), left_out));
        }
    }
    if map.len() + shown.len() > budget {
        return None;
    }
    let others: Vec<&str> = files
        .iter()
        .map(|(p, _, _)| p.as_str())
        .filter(|p| !by_file.iter().any(|(f, _)| f == p))
        .collect();
    let mut s = if bare { String::new() } else { map };
    if !others.is_empty() && !bare {
        let _ = writeln!(
            s,
            "Not shown below (READ them if you need them): {}",
            others.join(", ")
        );
    }
    let left: Vec<String> = partial
        .0
        .iter()
        .map(|(p, names)| format!("{} in {p}", names.join(", ")))
        .collect();
    let others_left = if left.is_empty() {
        String::new()
    } else {
        format!(
            "; the file's other functions are left out and stay as they are ({})",
            left.join("; ")
        )
    };
    if let Some(name) = written_anew {
        let _ = write!(
            s,
            "\nThe function named above, in its file, with its body left out: write `{name}` \
             anew, whole, under its signature and docstring, so that it does what they and the \
             task say{others_left}:\n\n"
        );
    } else if bare {
        let _ = write!(
            s,
            "\nThe function named above, in its file as it is now{others_left}:\n\n"
        );
    } else if left.is_empty() {
        s.push_str("\nThe files the task's command runs, as they are now:\n\n");
    } else {
        let _ = write!(
            s,
            "\nThe functions the task's command runs, in their files as they are now; the \
             files' other functions are left out and stay as they are ({}):\n\n",
            left.join("; ")
        );
    }
    s.push_str(&shown);
    let closing = match written_anew {
        Some(name) => format!(
            "Reply with the file as it is shown above, with `{name}` written whole: its path on \
             a line by itself, then its content in a fenced code block. The functions left out \
             stay as they are."
        ),
        None => "Reply with each file you change as it is shown above, with the change made: \
                 its path on a line by itself, then its content in a fenced code block. The \
                 functions left out stay as they are."
            .to_owned(),
    };
    let closing = layout.closing(&closing);
    let message = if layout.apart {
        format!("{}{TURN_BREAK}{task}\n{closing}", s.trim_end())
    } else {
        format!("Task: {task}\n\n{s}\nThe task again: {task}\n{closing}")
    };
    Some((message, partial))
}

/// The definitions a [`functions_message`] left out of the files it showed, by file: the
/// model never saw them, so a block that writes one is not taken for it (the file's own is
/// kept, [`crate::splice::keep_unshown`]) until the file is READ.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partial(pub Vec<(String, Vec<String>)>);

impl Partial {
    /// The definitions of `path` left out, if it was shown in part.
    pub fn left_out(&self, path: &str) -> Option<&[String]> {
        self.0
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, names)| names.as_slice())
    }

    /// `path` was READ whole: its definitions are seen now.
    pub fn seen(&mut self, path: &str) {
        self.0.retain(|(p, _)| p != path);
    }
}

/// The paths a first message shows whole ([`fenced`] blocks: a path line, then a fence, the
/// file, the same fence), in order. Any other fenced block (a command's output) is skipped
/// whole, and a file's own fenced lines never end its block, whose fence is longer.
pub fn shown_paths(message: &str) -> Vec<String> {
    let fence_of = |l: &str| {
        let ticks = l.chars().take_while(|&c| c == '`').count();
        (ticks >= 3).then(|| "`".repeat(ticks))
    };
    let mut out = Vec::new();
    let mut lines = message.lines().peekable();
    while let Some(line) = lines.next() {
        let opens = match fence_of(line) {
            Some(fence) => Some((fence, None)),
            None => lines
                .peek()
                .filter(|next| fence_of(next).is_some_and(|f| f.len() == next.len()))
                .filter(|_| !line.is_empty() && !line.contains(char::is_whitespace))
                .map(|next| ((*next).to_owned(), Some(line))),
        };
        let Some((fence, path)) = opens else { continue };
        if path.is_some() {
            lines.next();
        }
        for inner in lines.by_ref() {
            if inner == fence {
                break;
            }
        }
        out.extend(path.map(str::to_owned));
    }
    out
}

/// The line that heads a file shown whole as it should be written: `path`'s content with line
/// `line` as a refusal gives it ([`files_to_write`] finds it again).
pub fn to_write_heading(path: &str, line: usize) -> String {
    format!("{path} with line {line} so:")
}

/// The paths of the files `text` shows whole as they should be written: a
/// [`to_write_heading`] line, then the file [`fenced`].
pub fn files_to_write(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(3)
        .filter(|w| bare_fence(w[2]))
        .filter_map(|w| {
            let rest = w[0].strip_prefix(w[1])?.strip_prefix(" with line ")?;
            let n = rest.strip_suffix(" so:")?;
            (!w[1].is_empty() && n.parse::<usize>().is_ok()).then(|| w[1].to_owned())
        })
        .collect()
}

/// A line that is only a fence of three backticks or more, as [`fenced`] writes them.
fn bare_fence(line: &str) -> bool {
    line.len() >= 3 && line.chars().all(|c| c == '`')
}

/// `message` without the blocks that show `path`: the path on a line of its own, a fence of
/// three backticks or more (with or without a language), the content, the same fence alone.
/// A block left open is kept.
pub fn without_blocks(message: &str, path: &str) -> String {
    let lines: Vec<&str> = message.split_inclusive('\n').collect();
    let (mut out, mut i) = (String::new(), 0);
    while i < lines.len() {
        let opens = lines.get(i + 1).map(|l| l.trim_end()).and_then(|next| {
            let ticks = next.chars().take_while(|&c| c == '`').count();
            (lines[i].trim_end() == path && ticks >= 3 && !next[ticks..].contains('`'))
                .then(|| &next[..ticks])
        });
        match opens.and_then(|fence| (i + 2..lines.len()).find(|&k| lines[k].trim_end() == fence)) {
            Some(close) => i = close + 1,
            None => {
                out.push_str(lines[i]);
                i += 1;
            }
        }
    }
    out
}

/// A file as the whole protocol shows it: its path, then its content in a fence long enough
/// that the file's own fences cannot close it.
pub fn fenced(path: &str, text: &str) -> String {
    let longest = text
        .lines()
        .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let nl = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{path}\n{fence}\n{text}{nl}{fence}\n\n")
}

/// READ of a whole file in this protocol: the file as it is, fenced like the first message's
/// files, so that no line number finds its way into a file block. A range stays numbered.
pub fn read_as_is(ws: &Workspace, action: &Action, obs: &Observation) -> Observation {
    let Action::Read {
        path,
        start: None,
        end: None,
    } = action
    else {
        return obs.clone();
    };
    let text = ws
        .read(path)
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8(b).ok());
    match text {
        Some(text) if obs.ok => Observation {
            output: fenced(path, &text),
            ..obs.clone()
        },
        _ => obs.clone(),
    }
}

/// What follows the path in the summary of an [`unchanged`] block.
const UNCHANGED: &str = " not changed: your block is the file exactly as it is";

/// A turn whose every observation is of a file written back as it was: `Some` line naming
/// them, which history keeps instead of the copies (and the loop reads as an implied DONE
/// after the session's change). A small model shown its own copy of a file in the last turn
/// copies it again, even sampled warm (add-flag-sh: the same two files three turns running);
/// `None` when some observation is of anything else.
pub fn copied_back(observations: &[(String, Observation)]) -> Option<String> {
    let paths = observations
        .iter()
        .map(|(_, o)| o.summary.strip_suffix(UNCHANGED))
        .collect::<Option<Vec<_>>>()?;
    (!paths.is_empty()).then(|| {
        format!(
            "(I wrote {} back exactly as {} already, without the change.)",
            paths.join(", "),
            if paths.len() == 1 {
                "it was"
            } else {
                "they were"
            }
        )
    })
}

/// A file block that is the file as it already is: `Some` observation saying so. `changed`:
/// the session has already changed the repository — a model that made its change often
/// writes the file again instead of DONE, so it is reminded that DONE ends the task. `verb`:
/// the verb line the task's words call for, when they ask to delete or rename a file that is
/// still there ([`crate::asks::verb_asked`]): told instead. The 0.5B, asked to delete
/// old_notes.txt, wrote notes.txt back as it was, turn after turn.
pub fn unchanged(
    ws: &Workspace,
    action: &Action,
    changed: bool,
    verb: Option<String>,
) -> Option<Observation> {
    let Action::Create { path, content } = action else {
        return None;
    };
    let now = ws.read(path).ok().flatten()?;
    if now != content.as_bytes() {
        return None;
    }
    let hint = match verb {
        Some(v) => v,
        None if changed => "your earlier change is in place: if the task is finished, reply \
                            DONE; if not, write only the files that still need a change, with \
                            the change made"
            .to_owned(),
        None => "the task is not done in it yet. Reply in two parts: first one sentence saying \
                 which line must change and what it must become, then the file with that \
                 change made (a new file is written the same way: its path, then its content)"
            .to_owned(),
    };
    Some(Observation::error(
        format!("{path}{UNCHANGED}"),
        Some(&hint),
    ))
}

/// `reply` as history shows it: without the blocks that write the instructions' example
/// (its path line, its fence and its content). The 0.5B starts most replies with the
/// example's `colors.py` block before its real change; shown its own reply with the block,
/// it writes the block again, turn after turn. The journal keeps the reply as it came.
pub fn without_example_blocks(reply: &str) -> String {
    let lines: Vec<&str> = reply.lines().collect();
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("```")
            && let Some(len) = lines[i + 1..]
                .iter()
                .position(|l| l.trim_start().starts_with("```"))
        {
            let body = lines[i + 1..i + 1 + len].join("\n");
            if body.trim() == WHOLE_EXAMPLE_CONTENT.trim() {
                // The path line above the fence goes with it.
                while out.last().is_some_and(|l| l.trim().is_empty()) {
                    out.pop();
                }
                if out
                    .last()
                    .is_some_and(|l| !l.trim().is_empty() && !l.trim().contains(' '))
                {
                    out.pop();
                }
                i += len + 2;
                while i < lines.len() && lines[i].trim().is_empty() {
                    i += 1;
                }
                continue;
            }
            out.extend(&lines[i..i + len + 2]);
            i += len + 2;
            continue;
        }
        out.push(line);
        i += 1;
    }
    let mut text = out.join("\n");
    if reply.ends_with('\n') && !text.is_empty() {
        text.push('\n');
    }
    text
}

/// Words of a task that asks for code to go (or to move, be renamed or replaced): then a
/// file written without a definition it had is no surprise.
const REMOVING_WORDS: &[&str] = &[
    "remove", "delete", "drop", "rename", "move", "replace", "merge", "inline", "dead", "unused",
    "refactor", "clean", "rewrite", "split", "extract",
];

/// The definitions (`def f`, `class C`, a shell's `f() {`) the file has now that `content`,
/// written whole for it, no longer has, when `task` neither names them nor asks for code to
/// go: a small model asked to add a function writes only the new one (the 0.5B on
/// add-function), and the file would lose the rest. Such a block is refused, never trimmed.
pub fn dropped_definitions(original: &str, content: &str, task: &str) -> Vec<String> {
    let task_words = words_of(task);
    if task_words.iter().any(|w| asks_removal(w)) {
        return Vec::new();
    }
    dropped_unnamed(original, content, &task_words)
}

/// Of `left_out`, the definitions a first message left out of a file it showed in part
/// ([`Partial`]), those `content` (a block written whole for the file) lacks: the model never
/// saw them, so the block cannot mean to drop them.
pub fn unshown_dropped(left_out: Option<&[String]>, content: &str) -> Vec<String> {
    let kept = definitions(content);
    left_out
        .unwrap_or_default()
        .iter()
        .filter(|n| !kept.contains(n))
        .cloned()
        .collect()
}

/// A task word that asks for code to go ([`REMOVING_WORDS`], any form: `removed`, `dead`,
/// `refactoring`), but not the third person that tells what the code does: `` `python3
/// notice.py` drops text`` is a symptom, and let the 1.5B's textfmt.py lose two functions.
fn asks_removal(word: &str) -> bool {
    REMOVING_WORDS
        .iter()
        .any(|r| word.starts_with(r) && word != format!("{r}s") && word != format!("{r}es"))
}

/// [`dropped_definitions`] for a file the session itself created: no task asked for code to
/// go from a file that was not there, whatever its words. The 0.5B, asked to move helpers.py
/// into lib/, wrote the copy, deleted the original, then wrote a comment over the copy.
pub fn dropped_from_new_file(original: &str, content: &str, task: &str) -> Vec<String> {
    let task_words = words_of(task);
    dropped_unnamed(original, content, &task_words)
}

/// The words of `task`, lower-cased, split at anything but letters, digits and `_` (so a
/// name like `max_retries` stays one word).
fn words_of(task: &str) -> Vec<String> {
    task.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .collect()
}

/// The definitions of `original` that `content` lacks and `task_words` do not name.
pub(crate) fn dropped_unnamed(original: &str, content: &str, task_words: &[String]) -> Vec<String> {
    let kept = definitions(content);
    definitions(original)
        .into_iter()
        .filter(|name| !kept.contains(name) && !task_words.contains(&name.to_lowercase()))
        .collect()
}

/// For a file of code at `path` (Python or shell, by its extension or a `#!` line): the
/// names `original` binds at its top level ([`top_level_bindings`]) that `content` does not
/// mention at all (one moved under a main guard, or into a call, is still there) and `task`
/// does not name; none where the task asks for code to go. The 0.5B, asked to change
/// MAX_RETRIES in config.py, wrote the file back without its `NAME = …` line and said DONE.
/// A settings file too (`.ini`, `.cfg`, `.conf`, `.toml`, `.properties`, `.env`): its keys
/// and section headers ([`settings_keys`]); the 0.5B, asked to set two values in
/// settings.ini, wrote it back without its `[app]` section and `name = demo`, and said DONE.
pub fn dropped_bindings(path: &str, original: &str, content: &str, task: &str) -> Vec<String> {
    let task_words = words_of(task);
    if task_words.iter().any(|w| asks_removal(w)) {
        return Vec::new();
    }
    bindings(path, original)
        .into_iter()
        .filter(|name| {
            let bare = name.trim_matches(['[', ']']).to_lowercase();
            !task_words.contains(&bare) && !mentions(content, name)
        })
        .collect()
}

/// What a file at `path` binds that other code or readers rely on: for code (Python or
/// shell, by extension or a `#!` line) its [`top_level_bindings`], for a settings file its
/// [`settings_keys`], else nothing.
pub(crate) fn bindings(path: &str, text: &str) -> Vec<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("py" | "sh" | "bash" | "zsh" | "ksh") => top_level_bindings(text),
        Some("ini" | "cfg" | "conf" | "toml" | "properties" | "env") => settings_keys(text),
        Some(_) => Vec::new(),
        None if text.starts_with("#!") => top_level_bindings(text),
        None => Vec::new(),
    }
}

/// The keys a settings file sets at the start of a line (`name = demo`, `name: demo`,
/// `NAME=x`) and its section headers (`[app]`, `[[bin]]`), each once.
pub(crate) fn settings_keys(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let t = line.trim_end();
        if t.starts_with('[') && t.ends_with(']') {
            if !out.iter().any(|o| o == t) {
                out.push(t.to_owned());
            }
            continue;
        }
        let key: String = t
            .strip_prefix("export ")
            .unwrap_or(t)
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .collect();
        let rest = t.strip_prefix("export ").unwrap_or(t)[key.len()..].trim_start();
        let sets = rest.starts_with('=') && !rest.starts_with("==") || rest.starts_with(':');
        if !key.is_empty() && sets && !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

/// The constants a file sets on lines of its own at column 0 — upper-case names, by
/// convention the settings other code reads (`config.NAME`), where a lower-case variable is
/// the file's own business: `NAME = …`, `NAME: int = …` (Python), `NAME=…`,
/// `export NAME=…`, `readonly NAME=…` (shell). Tuple targets, augmented assignments and
/// comparisons are not bindings of a name of their own.
pub(crate) fn top_level_bindings(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let t = line
            .strip_prefix("export ")
            .or_else(|| line.strip_prefix("readonly "))
            .unwrap_or(line);
        let name: String = t
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_digit())
            || !name.chars().any(|c| c.is_ascii_uppercase())
            || name.chars().any(char::is_lowercase)
        {
            continue;
        }
        let rest = t[name.len()..].trim_start();
        // `NAME: int = 5` (an annotation), else `NAME = 5` / `NAME=5`, never `NAME == 5`.
        let value = match rest.strip_prefix(':') {
            Some(annotated) => annotated.split_once('=').map(|(_, v)| v),
            None => rest.strip_prefix('='),
        };
        if value.is_some_and(|v| !v.starts_with('=')) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Whether `text` has `name` as a whole word (not inside a longer identifier).
fn mentions(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(ident)
            && !text[i + name.len()..].chars().next().is_some_and(ident)
    })
}

/// Words of a task that may rewrite a file through and through.
const REWRITING_WORDS: &[&str] = &[
    "replace",
    "rewrite",
    "overwrite",
    "convert",
    "translate",
    "empty",
    "clear",
    "reset",
    "regenerate",
    "reformat",
];

/// When `content`, written whole over a file of at least three distinct non-blank lines,
/// keeps none of them (compared without indentation) and `task` does not ask for the file
/// to be rewritten: the number of lines it would lose. A small model asked to fix one word
/// of README.md wrote unrelated code over it and said DONE; no fix keeps nothing.
pub fn replaced_entirely(original: &str, content: &str, task: &str) -> Option<usize> {
    let lines = |t: &str| -> BTreeSet<String> {
        t.lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let before = lines(original);
    if before.len() < 3 {
        return None;
    }
    let rewriting = task
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .any(|w| {
            REWRITING_WORDS
                .iter()
                .chain(REMOVING_WORDS)
                .any(|r| w.starts_with(r))
        });
    let after = lines(content);
    (!rewriting && before.is_disjoint(&after)).then_some(before.len())
}

/// What the model is told about a file block that keeps none of the file's lines.
pub fn replaced_observation(path: &str, lines: usize) -> Observation {
    Observation::error(
        format!(
            "{path} not written: your block keeps none of its {lines} non-blank lines, and the task \
             does not ask to replace the file"
        ),
        Some(
            "write the file as it is now, every line kept, with only the change the task \
             asks for made",
        ),
    )
}

/// The names a file defines: Python `def`/`async def`/`class` at any indent, and shell
/// functions `name() {` / `function name`.
pub(crate) fn definitions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let rest = t
            .strip_prefix("def ")
            .or_else(|| t.strip_prefix("async def "))
            .or_else(|| t.strip_prefix("class "))
            .or_else(|| t.strip_prefix("function "));
        let name: String = match rest {
            Some(r) => r
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect(),
            None => match t.split_once("()") {
                Some((n, after))
                    if !n.is_empty()
                        && n.chars().all(|c| c.is_alphanumeric() || c == '_')
                        && after.trim_start().starts_with('{') =>
                {
                    n.to_owned()
                }
                _ => continue,
            },
        };
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// What the model is told about a file block that would lose definitions.
pub fn dropped_observation(path: &str, names: &[String]) -> Observation {
    Observation::error(
        format!(
            "{path} not written: it would lose {}, which the task does not ask to remove",
            names.join(", ")
        ),
        Some(
            "write the file's complete new content: everything it has now (every function, \
             also the ones you do not change) with your change added",
        ),
    )
}

/// What a finished reply decoded to: its proposals in order, the prose between them, and the
/// named failures (a codec kind, or [`ELIDED`]) with their raw text.
#[derive(Debug, Default)]
pub struct Decoded {
    pub proposals: Vec<ActionProposal>,
    pub prose: Vec<String>,
    pub failures: Vec<(String, String)>,
}

/// Decodes a finished reply: whole-file blocks become `CREATE`s (a block that leaves code out
/// a failure instead, unless the file itself has that line), and the text between them is
/// decoded as the text protocol. `cut`: the reply hit its token limit.
pub fn decode(reply: &str, cut: bool, ws: &Workspace, registry: &Registry) -> Decoded {
    let mut out = Decoded::default();
    let known = |p: &str| ws.resolve(p).is_ok_and(|p| p.is_file());
    for piece in split_known(reply, cut, &known) {
        match piece {
            Piece::Text(text) => {
                for word in headless_blocks(text) {
                    out.failures.push((HEADLESS.to_owned(), word.to_owned()));
                }
                let registry = std::sync::Arc::new(registry.clone());
                let mut decoder = TurnDecoder::new(Mode::Only(FormatId::Text), registry);
                let mut events = Vec::new();
                decoder.feed_into(text, &mut events);
                decoder.finish_into(&mut events);
                for e in events {
                    match e {
                        codec::Event::Text(t) | codec::Event::Reasoning(t) => out.prose.push(t),
                        codec::Event::Proposal { proposal, .. } => out.proposals.push(proposal),
                        codec::Event::Failure { kind, raw, .. } => {
                            out.failures.push((kind.as_str().to_owned(), raw))
                        }
                        codec::Event::ToolCallStart { .. } | codec::Event::ArgsDelta { .. } => {}
                    }
                }
            }
            Piece::File(f) => {
                let original = ws
                    .read(&f.path)
                    .ok()
                    .flatten()
                    .and_then(|b| String::from_utf8(b).ok());
                let elided = f.elision.as_deref().filter(|line| {
                    !original
                        .as_deref()
                        .is_some_and(|o| o.lines().any(|l| l.trim() == *line))
                });
                // A small model that loops writes the same block again: acted on once.
                let again = out.proposals.iter().any(|p| {
                    matches!(&p.action, Action::Create { path, content }
                        if *path == f.path && *content == f.content)
                });
                let diff = original
                    .as_deref()
                    .is_some_and(|o| diff_in_block(o, &f.content));
                // A diff whose marked lines line up with the file exactly is read as the
                // change it shows (or as the file as it is), never guessed at otherwise.
                let undiffed = match (diff, original.as_deref()) {
                    (true, Some(o)) => undiff(o, &f.content),
                    _ => None,
                };
                match elided {
                    Some(_) => out
                        .failures
                        .push((ELIDED.to_owned(), format!("{}\n{}", f.path, f.content))),
                    None if diff && undiffed.is_none() => out
                        .failures
                        .push((DIFF.to_owned(), format!("{}\n{}", f.path, f.content))),
                    None if again => {}
                    None => out.proposals.push(ActionProposal {
                        action: Action::Create {
                            path: f.path,
                            content: undiffed.clone().unwrap_or(f.content),
                        },
                        repairs: undiffed
                            .map(|_| vec![codec::RepairKind::DiffMarkersInFile])
                            .unwrap_or_default(),
                        format: FormatId::Text,
                    }),
                }
            }
            Piece::Failure { kind, raw } => out.failures.push((kind.as_str().to_owned(), raw)),
        }
    }
    // Told only when nothing else in the reply acted or failed: beside a written file, a
    // fenced snippet in prose is an explanation, not a lost file.
    // A block whose definitions are one file's own goes there, spliced in
    // ([`crate::splice::place`]); any other is told.
    if out.proposals.is_empty() && out.failures.is_empty() {
        let unnamed: Vec<&str> = split_known(reply, cut, &known)
            .into_iter()
            .flat_map(|piece| match piece {
                Piece::Text(text) => unnamed_blocks(text),
                _ => Vec::new(),
            })
            .collect();
        let placement = placed(ws, &unnamed);
        if let crate::splice::Placement::Same(path) = &placement {
            out.failures.push((SAME_BLOCK.to_owned(), path.clone()));
        } else if let crate::splice::Placement::Change(path, s) = placement {
            let mut repairs = vec![codec::RepairKind::BlockPlacedByDefinitions];
            if !s.kept.is_empty() {
                repairs.push(codec::RepairKind::PartialFileMerged);
            }
            out.proposals.push(ActionProposal {
                action: Action::Create {
                    path,
                    content: s.content,
                },
                repairs,
                format: FormatId::Text,
            });
        } else if let Some(block) = unnamed.first() {
            out.failures.push((UNNAMED.to_owned(), (*block).to_owned()));
        }
    }
    out
}

/// Where the unnamed blocks go by their definitions ([`crate::splice::placement`]).
fn placed(ws: &Workspace, blocks: &[&str]) -> crate::splice::Placement {
    if blocks.is_empty() {
        return crate::splice::Placement::Nowhere;
    }
    let bodies: Vec<&str> = blocks.iter().map(|b| fence_body(b)).collect();
    let files: Vec<(String, String)> = repository_files(ws)
        .into_iter()
        .filter_map(|(path, text, _)| Some((path, text?)))
        .collect();
    crate::splice::placement(&files, &bodies)
}

/// The lines inside a fenced block (its opening fence line and closing fence left out).
fn fence_body(block: &str) -> &str {
    let after_open = block.split_once('\n').map_or("", |(_, rest)| rest);
    match after_open.rfind("```") {
        Some(close) if after_open[close..].trim() == "```" => &after_open[..close],
        _ => after_open,
    }
}

/// What the model is told about a failure kind of this protocol, if it has its own words.
pub fn failure_hint(kind: &str) -> Option<&'static str> {
    match kind {
        ELIDED => Some(
            "a file block must hold the file's complete content: write every line, without \
             placeholders for code left out (to delete a file, write DELETE and its path on a \
             line of its own)",
        ),
        DIFF => Some(
            "a file block holds the file's content itself: no + or - markers before its lines, \
             no diff headers and nothing copied from tool output",
        ),
        HEADLESS => Some(
            "the line above a file block must be the path of the file, with its name (for a \
             file in a directory: the directory, a slash, then the file's name, e.g. \
             dir/name.txt); a directory or a word is not a file",
        ),
        SAME_BLOCK => Some(
            "your code block holds code exactly as its file has it now, so nothing changed: \
             the task is not done yet. Change the code differently, and write the file's path \
             alone on the line above the fence",
        ),
        UNNAMED => Some(
            "your code block has no path above it, so nothing was written: put the file's \
             path alone on the line right above the opening fence (e.g. app.py, or \
             dir/name.txt), then the file's complete new content in the fence; a command \
             goes on a line of its own, outside any fence",
        ),
        "truncated_file" => Some(
            "the reply ended inside a file block, so nothing was written: write the file \
             again, complete, and keep the reply short",
        ),
        "empty_unclosed_file" => Some(
            "the reply ended right after the opening fence of a file block, so nothing was \
             written: to change the file, write its complete new content in the fence and \
             close it with ```; to delete a file, reply DELETE and its path",
        ),
        _ => None,
    }
}

/// The opening fences of `lines` (prose the splitter left), each with its index and the line
/// heading it: the one right above, or the one above that when a blank line is between.
/// Only an opening fence has a header; a closing one has the block's last line above.
fn opening_fences<'t>(lines: &[&'t str]) -> Vec<(usize, Option<&'t str>)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (k, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with("```") {
            continue;
        }
        inside = !inside;
        if !inside {
            continue;
        }
        let above = match k.checked_sub(1).map(|j| lines[j].trim()) {
            Some("") => k.checked_sub(2).map(|j| lines[j].trim()),
            other => other,
        };
        out.push((k, above));
    }
    out
}

/// Bare words (no slash, no extension, no space) that head a fenced block in text the splitter
/// left as prose: a model naming a directory, or a file without its name, above a file's
/// content. Not a guess at a path: the block is not written, the model is told to name it.
fn headless_blocks(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (_, above) in opening_fences(&lines) {
        let Some(word) = above else { continue };
        let word = word.trim_matches(['*', '`']).trim_end_matches('/');
        let bare = !word.is_empty()
            && word.len() <= 64
            && word
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
            && word.bytes().any(|c| c.is_ascii_lowercase())
            && !out.contains(&word);
        if bare {
            out.push(word);
        }
    }
    out
}

/// The fenced blocks in `text` (prose the splitter left) whose opening fence has no
/// path line above it: nothing, a blank, or a sentence (a line with a space, or ending in
/// `:`) right above it, one blank line skipped. A bare word above is [`headless_blocks`]'.
fn unnamed_blocks(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (k, above) in opening_fences(&lines) {
        let line = lines[k];
        let prose = match above {
            None | Some("") => true,
            Some(a) => a.contains(char::is_whitespace) || a.ends_with(':'),
        };
        if !prose {
            continue;
        }
        // The block: from the fence to its closing fence (or the end of the text).
        let offset = |l: &str| l.as_ptr() as usize - text.as_ptr() as usize;
        let start = offset(line);
        let end = lines[k + 1..]
            .iter()
            .find(|l| l.trim_start().starts_with("```"))
            .map_or(text.len(), |l| offset(l) + l.len());
        let block = &text[start..end];
        // An empty block is no lost file.
        let body = block.lines().skip(1);
        if body
            .filter(|l| !l.trim_start().starts_with("```"))
            .any(|l| !l.trim().is_empty())
        {
            out.push(block);
        }
    }
    out
}

/// Whether `content`, a whole-file block for a file that now reads `original`, is a diff of it
/// or a copy of tool output rather than its content: a line `</output>` or `@@ … @@` the file
/// does not have, or a line the file does not have that is `+`/`-` and then one of the file's
/// own lines (the diff a change's observation shows). Never a guess: such a block is refused.
pub(crate) fn diff_in_block(original: &str, content: &str) -> bool {
    let has = |l: &str| original.lines().any(|o| o == l);
    content.lines().any(|line| {
        if has(line) {
            return false;
        }
        if line == "</output>" || line == "<output>" || line.starts_with("@@ -") {
            return true;
        }
        match line.strip_prefix(['+', '-']) {
            Some(rest) => !rest.trim().is_empty() && has(rest),
            None => false,
        }
    })
}

/// A whole-file block written as a diff of the file — its unmarked lines and its `-` lines
/// are the file as it is now, line for line — read as what it shows: the unmarked and `+`
/// lines, the file's new content. Also a block whose unmarked and `+` lines are the file as
/// it is (a small model writing its change again as a diff after making it): the file,
/// unchanged. `None` when neither side is the file exactly: a guess is never made.
pub(crate) fn undiff(original: &str, content: &str) -> Option<String> {
    let (mut old, mut new) = (String::new(), String::new());
    let (mut minus, mut plus) = (0, 0);
    for line in content.lines() {
        if let Some(rest) = line.strip_prefix('-') {
            minus += 1;
            old.push_str(rest);
            old.push('\n');
        } else if let Some(rest) = line.strip_prefix('+') {
            plus += 1;
            new.push_str(rest);
            new.push('\n');
        } else {
            old.push_str(line);
            old.push('\n');
            new.push_str(line);
            new.push('\n');
        }
    }
    let is_file = |text: &str| text.trim_end_matches('\n') == original.trim_end_matches('\n');
    if minus + plus == 0 {
        return None;
    }
    let file = |text: String| {
        // The file's own final newline (or its absence) is kept.
        let body = text.trim_end_matches('\n');
        if original.ends_with('\n') {
            format!("{body}\n")
        } else {
            body.to_owned()
        }
    };
    if is_file(&old) {
        Some(file(new))
    } else if is_file(&new) {
        Some(original.to_owned())
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn a_file_to_write_is_found_by_its_heading_and_its_blocks_left_out() {
        let right = "x = 2\n";
        let told = format!(
            "- DONE refused\n\n{}\n{}What to do now: write a.py\n",
            super::to_write_heading("a.py", 1),
            super::fenced("a.py", right)
        );
        assert_eq!(super::files_to_write(&told), ["a.py"]);
        // A file shown as it is, without the heading, is not one to write.
        assert!(super::files_to_write(&super::fenced("a.py", right)).is_empty());
        let message = format!(
            "The files:\n\n{}{}The task again: x\n",
            super::fenced("a.py", "x = 1\n```\nnot the end\n"),
            super::fenced("b.py", "y = 1\n")
        );
        assert_eq!(
            super::without_blocks(&message, "a.py"),
            format!(
                "The files:\n\n\n{}The task again: x\n",
                super::fenced("b.py", "y = 1\n")
            )
        );
        assert_eq!(super::without_blocks(&message, "c.py"), message);
        // A model's blocks, with a language, each one; a path named in prose or a block
        // left open is kept.
        let reply =
            "a.py\n```python\nx = 3\n```\nsee a.py\na.py\n```py\nx = 4\n```\na.py\n```\nopen\n";
        assert_eq!(
            super::without_blocks(reply, "a.py"),
            "see a.py\na.py\n```\nopen\n"
        );
    }
    use super::{diff_in_block, undiff};

    fn traced(calls: &[(&str, &str)]) -> Vec<crate::trace::Traced> {
        vec![crate::trace::Traced {
            command: "python3 main.py".to_owned(),
            functions: calls
                .iter()
                .map(|(p, n)| crate::trace::Function {
                    path: (*p).to_owned(),
                    name: (*n).to_owned(),
                    calls: Vec::new(),
                    callers: Vec::new(),
                    count: 0,
                })
                .collect(),
            shell: false,
        }]
    }

    #[test]
    fn a_functions_message_needs_few_functions_of_files_the_session_may_change() {
        let lib: String = (1..=8)
            .map(|k| format!("def f{k}():\n    return {k}\n\n\n"))
            .collect();
        let (_dir, ws) = crate::testing::repo(&[
            ("lib.py", lib.as_str()),
            ("test_lib.py", "def test_one():\n    assert 1\n"),
            ("main.py", "import lib\nprint(lib.f1())\n"),
        ]);
        let m = |calls: &[(&str, &str)], protected: &[&str], apart: bool| {
            let protected: Vec<String> = protected.iter().map(|p| (*p).to_owned()).collect();
            super::functions_message(
                &ws,
                "fix it",
                10_000,
                super::Layout {
                    apart,
                    ..super::Layout::default()
                },
                &traced(calls),
                &protected,
                super::Shown::Traced,
            )
        };
        let (message, partial) =
            m(&[("lib.py", "f2"), ("test_lib.py", "test_one")], &[], false).unwrap();
        assert!(
            message.contains("lib.py\n```\ndef f2():\n    return 2\n```\n"),
            "{message}"
        );
        assert!(!message.contains("test_one():"), "{message}");
        assert_eq!(super::shown_paths(&message), ["lib.py"]);
        assert_eq!(
            partial.left_out("lib.py").unwrap(),
            ["f1", "f3", "f4", "f5", "f6", "f7", "f8"]
        );
        assert!(message.ends_with("The functions left out stay as they are."));
        // Apart: the task after the turn break.
        let (message, _) = m(&[("lib.py", "f2")], &[], true).unwrap();
        assert!(
            message.contains(&format!("{}fix it\n", super::TURN_BREAK)),
            "{message}"
        );
        // More than MAX_SHOWN_FUNCTIONS, only tests, only protected files, a method: none.
        let many: Vec<(&str, &str)> = ["f1", "f2", "f3", "f4", "f5", "f6", "f7"]
            .iter()
            .map(|f| ("lib.py", *f))
            .collect();
        assert!(m(&many, &[], false).is_none());
        assert!(m(&[("test_lib.py", "test_one")], &[], false).is_none());
        assert!(m(&[("lib.py", "f2")], &["lib.py"], false).is_none());
        assert!(m(&[("lib.py", "method")], &[], false).is_none());
    }

    #[test]
    fn say_first_asks_for_the_change_in_words_before_the_files_in_every_layout() {
        let (_dir, ws) = crate::testing::repo(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
        for apart in [false, true] {
            for focus in [false, true] {
                let plain = super::Layout {
                    apart,
                    focus,
                    say_first: false,
                    long: None,
                };
                let said = super::Layout {
                    say_first: true,
                    ..plain
                };
                let without = super::task_message(&ws, "Fix add in calc.py.", 10_000, plain);
                let with = super::task_message(&ws, "Fix add in calc.py.", 10_000, said);
                assert!(!without.contains(super::SAY_FIRST), "{without}");
                // The request comes after the files, just before what to reply.
                let at = with.find(super::SAY_FIRST).unwrap();
                assert!(at > with.find("def add").unwrap(), "{with}");
                assert_eq!(with.replace(super::SAY_FIRST, ""), without);
            }
        }
    }

    #[test]
    fn the_paths_a_message_shows_are_its_file_blocks_and_nothing_inside_a_fence() {
        let doc = super::fenced("README.md", "Run:\n```\nsh run.sh\n```\nnotes.txt\n```\n");
        let message = format!(
            "Task: fix it\nRunning `sh x` (exit 0):\n```\nok\n```\n\
             The files, as they are now:\n\n{}{doc}b.py\n```\n\n```\n",
            super::fenced("a.py", "print(1)\n"),
        );
        assert_eq!(super::shown_paths(&message), ["a.py", "README.md", "b.py"]);
        assert!(super::shown_paths("a.py\nno fence\n").is_empty());
    }

    #[test]
    fn the_examples_block_is_left_out_of_the_reply_history_shows() {
        use super::without_example_blocks as clean;
        let example = format!(
            "colors.py\n```python\n{}```\n",
            super::WHOLE_EXAMPLE_CONTENT
        );
        let real = "greet.py\n```python\nprint(1)\n```\n";
        assert_eq!(clean(&format!("{example}\n{real}")), real);
        assert_eq!(clean(&format!("{real}{example}")), real);
        // Anywhere else, under any path, the same content is the example still.
        let elsewhere = example.replace("colors.py", "README.md");
        assert_eq!(clean(&format!("{elsewhere}DONE")), "DONE");
        // A reply without it is kept byte for byte, an unclosed fence too.
        for kept in [real, "x\n```\nunclosed", "prose only"] {
            assert_eq!(clean(kept), kept);
        }
    }

    #[test]
    fn a_block_that_keeps_no_line_of_the_file_is_told() {
        use super::replaced_entirely as replaced;
        let readme = "# app\n\nRuns things.\nSee docs.\n";
        let fix = "Fix the typo in README.md.";
        assert_eq!(replaced(readme, "x = 1\ny = 2\n", fix), Some(3));
        // One line kept (indentation aside) is an edit, not a replacement.
        assert_eq!(replaced(readme, "  # app\nother\n", fix), None);
        // A file of fewer than three distinct lines may change through and through.
        assert_eq!(replaced("A = 1\nA = 1\n\nB = 2\n", "C = 3\n", fix), None);
        // Asked for, a rewrite is no surprise.
        assert_eq!(
            replaced(readme, "x\n", "Rewrite README.md in French."),
            None
        );
        assert_eq!(replaced(readme, "x\n", "Convert README.md to reST."), None);
    }

    #[test]
    fn top_level_bindings_are_names_set_at_column_zero() {
        let py = "import os\nNAME = \"x\"\nLIMIT: int = 5\nif NAME == \"y\":\n    inner = 1\n\
                  a, b = 1, 2\nCOUNT += 1\nPATH=/tmp\ndef f(x=1):\n    pass\nelse_ = {\"k\": 1}\n";
        assert_eq!(super::top_level_bindings(py), ["NAME", "LIMIT", "PATH"]);
        let sh = "#!/bin/sh\nexport DEST=/backup\nreadonly KEEP=3\nlocal x=1\n[ \"$a\" = b ]\n";
        assert_eq!(super::top_level_bindings(sh), ["DEST", "KEEP"]);
    }

    #[test]
    fn a_block_that_loses_a_setting_the_task_keeps_is_told() {
        use super::dropped_bindings as dropped;
        let config = "NAME = \"fetcher\"\nMAX_RETRIES = 3\n";
        let task = "Change MAX_RETRIES from 3 to 5 in config.py.";
        assert_eq!(
            dropped("config.py", config, "MAX_RETRIES = 5\n", task),
            ["NAME"]
        );
        assert!(
            dropped(
                "config.py",
                config,
                "NAME = 'fetcher'\nMAX_RETRIES = 5\n",
                task
            )
            .is_empty()
        );
        // Named, asked to go, or not code: no surprise.
        assert!(
            dropped(
                "config.py",
                config,
                "MAX_RETRIES = 5\n",
                "Drop NAME; set MAX_RETRIES to 5."
            )
            .is_empty()
        );
        assert!(
            dropped(
                "config.py",
                config,
                "MAX_RETRIES = 5\n",
                "Remove the unused setting."
            )
            .is_empty()
        );
        assert!(dropped("notes.md", config, "MAX_RETRIES = 5\n", task).is_empty());
        // A settings file's keys and sections.
        let ini = "[server]\nhost = localhost\nport = 8000\n\n[app]\nname = demo\ndebug = true\n";
        let set = "In settings.ini, set port to 8080 and debug to false.";
        assert_eq!(
            dropped(
                "settings.ini",
                ini,
                "[server]\nhost = localhost\nport = 8080\ndebug = false\n",
                set
            ),
            ["[app]", "name"]
        );
        let right =
            "[server]\nhost = localhost\nport = 8080\n\n[app]\nname = demo\ndebug = false\n";
        assert!(dropped("settings.ini", ini, right, set).is_empty());
        assert!(
            dropped(
                "settings.ini",
                ini,
                "[server]\nport = 8080\n",
                "Remove the [app] section and host."
            )
            .is_empty()
        );
        assert_eq!(
            super::settings_keys("# c\nA=1\nexport B=2\nkey: v\n  nested: x\n[[bin]]\nx == y\n"),
            ["A", "B", "key", "[[bin]]"]
        );
        // Moved under a main guard, or used elsewhere, a name is still there.
        let demo = "import sys\nTEXT = sys.argv[1]\nprint(TEXT)\n";
        let guarded =
            "import sys\n\nif __name__ == \"__main__\":\n    TEXT = sys.argv[1]\n    print(TEXT)\n";
        // A lower-case variable is the file's own business.
        assert!(
            dropped(
                "demo.py",
                "text = 'a'\nprint(text)\n",
                "print('a')\n",
                "Tidy it."
            )
            .is_empty()
        );
        assert!(
            dropped(
                "demo.py",
                demo,
                guarded,
                "Run the demo only when run directly."
            )
            .is_empty()
        );
        // A longer identifier is not the name.
        assert_eq!(
            dropped("c.py", "TIMEOUT = 1\n", "TIMEOUT_S = 1\n", "Tidy c.py."),
            ["TIMEOUT"]
        );
        // A shell script without an extension is code by its `#!` line.
        let script = "#!/bin/sh\nDEST=/backup\ncp a \"$DEST\"\n";
        assert_eq!(
            dropped("backup", script, "#!/bin/sh\ncp a /b\n", "Copy b too."),
            ["DEST"]
        );
    }

    #[test]
    fn a_block_that_loses_definitions_the_task_keeps_is_told() {
        use super::dropped_definitions as dropped;
        let file = "def double(x):\n    return 2 * x\n";
        let only_new = "def square(x):\n    return x * x\n";
        let both = "def double(x):\n    return 2 * x\n\n\ndef square(x):\n    return x * x\n";
        let task = "Add a function square(x) to mathx.py that returns x times x.";
        assert_eq!(dropped(file, only_new, task), ["double"]);
        assert!(dropped(file, both, task).is_empty());
        // Asked to go, or named: no surprise.
        assert!(dropped(file, only_new, "Remove double and add square.").is_empty());
        assert!(dropped(file, only_new, "Replace double with square(x).").is_empty());
        assert!(
            dropped(
                file,
                only_new,
                "double is wrong: write square instead of double"
            )
            .is_empty()
        );
        assert!(dropped(file, only_new, "Square is dead code; add it back.").is_empty());
        // What the code does wrong is no request: `drops text` keeps the definitions.
        assert_eq!(
            dropped(
                file,
                only_new,
                "`python3 notice.py` drops text and removes lines."
            ),
            ["double"]
        );
        // A definition never shown (the file shown in part) is never the block's to drop,
        // whatever the task's words.
        let names = ["double".to_owned(), "half".to_owned()];
        assert_eq!(
            super::unshown_dropped(Some(&names), only_new),
            ["double", "half"]
        );
        assert_eq!(super::unshown_dropped(Some(&names), both), ["half"]);
        assert!(super::unshown_dropped(None, only_new).is_empty());
        // Shell functions and classes count too.
        let sh = "usage() {\n  echo u\n}\nmain() {\n  usage\n}\n";
        assert_eq!(dropped(sh, "main() {\n  echo\n}\n", "Add -c."), ["usage"]);
        assert_eq!(dropped("class A:\n    pass\n", "x = 1\n", "Add x."), ["A"]);
    }

    #[test]
    fn a_diff_that_lines_up_with_the_file_is_read_as_its_change() {
        let file = "NAME = \"fetcher\"\nMAX_RETRIES = 3\nTIMEOUT = 10\n";
        // The `-` side is the file: the `+` side is the new content.
        assert_eq!(
            undiff(
                file,
                "NAME = \"fetcher\"\n-MAX_RETRIES = 3\n+MAX_RETRIES = 5\nTIMEOUT = 10\n"
            )
            .as_deref(),
            Some("NAME = \"fetcher\"\nMAX_RETRIES = 5\nTIMEOUT = 10\n")
        );
        // The change made already, written again as a diff: the file as it is.
        let done = "NAME = \"fetcher\"\nMAX_RETRIES = 5\nTIMEOUT = 10\n";
        assert_eq!(
            undiff(
                done,
                "NAME = \"fetcher\"\n-MAX_RETRIES = 3\n+MAX_RETRIES = 5\nTIMEOUT = 10\n"
            )
            .as_deref(),
            Some(done)
        );
        // Neither side is the file (a line left out): no guess.
        assert_eq!(undiff(file, "-MAX_RETRIES = 3\n+MAX_RETRIES = 5\n"), None);
        // No markers at all is no diff.
        assert_eq!(undiff(file, file), None);
    }

    #[test]
    fn a_diff_or_tool_output_in_a_block_is_told_apart_from_code() {
        let file = "def f(x):\n    if not x:\n        return 0\n    return x\n";
        assert!(diff_in_block(
            file,
            "def f(x):\n+    if not x:\n        return 0\n"
        ));
        assert!(diff_in_block(file, "def f(x):\n    return x\n</output>\n"));
        assert!(diff_in_block(file, "@@ -1,3 +1,4 @@\ndef f(x):\n"));
        // Code with + and - of its own, and a file that has such lines, are code.
        assert!(!diff_in_block(file, "def f(x):\n    return -x\n+1\n"));
        assert!(!diff_in_block("-x\n", "-x\n"));
        assert!(!diff_in_block("a\n", "- a list item\n- another\n"));
    }
}
