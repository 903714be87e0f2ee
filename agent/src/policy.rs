//! Approval policy as data: which actions need the user, and the [`Approver`] that asks.

use std::collections::VecDeque;
use std::io::{BufRead, Write};

use codec::Action;

/// `--approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    /// Read-only: read, list, glob, grep (and done). Everything else is refused.
    Plan,
    /// Every change and every command is asked for.
    Ask,
    /// Edits are automatic; commands ask unless `--allow-run` matches.
    Edits,
    /// Everything inside the confinement runs unasked.
    Auto,
}

impl ApprovalMode {
    pub fn parse(s: &str) -> Option<ApprovalMode> {
        match s {
            "plan" => Some(ApprovalMode::Plan),
            "ask" => Some(ApprovalMode::Ask),
            "edits" => Some(ApprovalMode::Edits),
            "auto" => Some(ApprovalMode::Auto),
            _ => None,
        }
    }

    /// The builtin tools this mode offers: the system prompt, the grammar and the executor
    /// all use this one list.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            ApprovalMode::Plan => &["read", "list", "glob", "grep", "done"],
            _ => &[
                "read", "list", "glob", "grep", "run", "delete", "mkdir", "move", "edit", "create",
                "done",
            ],
        }
    }
}

/// What a kind of action does to the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Read,
    Write,
    Run,
    Finish,
}

pub fn effect(action: &Action) -> Effect {
    match action {
        Action::Read { .. } | Action::List { .. } | Action::Glob { .. } | Action::Grep { .. } => {
            Effect::Read
        }
        Action::Run { .. } | Action::Client { .. } => Effect::Run,
        Action::Done { .. } => Effect::Finish,
        _ => Effect::Write,
    }
}

/// What the policy says about one action before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Ask,
    Refuse,
}

/// The approval mode plus `--allow-run` patterns.
#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: ApprovalMode,
    /// Commands `edits` mode runs unasked (see [`RunPattern`] for the grammar).
    pub allow_run: Vec<RunPattern>,
}

/// One `--allow-run` pattern, matched against whole argv elements.
///
/// The pattern is split into words as a RUN line is ([`codec::registry::split_argv`]: POSIX
/// quoting, no expansion, shell syntax such as `;` or `|` refused). Each word must equal one
/// argv element exactly, the first one the program as written (`cargo` matches neither
/// `./cargo` nor `/tmp/x/cargo`); a final lone `*` word matches any number (zero or more) of
/// further arguments. `*` anywhere else (glued to a word, as in `cargo test*`, or before the
/// last word) is refused when the pattern is parsed, so `*` has no literal form. Examples:
/// `cargo test` matches exactly `cargo test`; `cargo test *` matches `cargo test` and
/// `cargo test -p x`, but not `cargo test-x`, `cargo testfoo` or `cargo 'test; rm -rf /'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPattern {
    /// At least one: a pattern always names its program.
    words: Vec<String>,
    /// A final lone `*`: any further arguments.
    rest: bool,
}

/// Why an `--allow-run` pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunPatternError {
    #[error("the pattern is empty; name a command, e.g. `cargo test *`")]
    Empty,
    #[error("the pattern is only `*`; name the program first, e.g. `cargo test *`")]
    NoProgram,
    #[error("{}", split_message(*.0))]
    Split(codec::registry::SplitError),
    #[error(
        "`*` is glued to {word:?}; write `{suggestion}` (a lone `*` word at the end matches any further arguments)"
    )]
    GluedStar { word: String, suggestion: String },
    #[error(
        "`*` may only be a word of its own at the end of the pattern (as in `cargo test *`), not in {word:?}"
    )]
    MisplacedStar { word: String },
}

fn split_message(e: codec::registry::SplitError) -> &'static str {
    use codec::registry::SplitError;
    match e {
        SplitError::Unclosed => "a quote or a trailing backslash is not closed",
        SplitError::ShellSyntax => {
            "shell syntax (`|`, `&`, `;`, `<`, `>`, `` ` ``, `$(`, `(`, `)`) is not a command: \
             quote it if it is meant as an argument"
        }
        SplitError::Newline => "the pattern holds a newline",
    }
}

impl RunPattern {
    pub fn parse(pattern: &str) -> Result<RunPattern, RunPatternError> {
        let mut words = codec::registry::split_argv(pattern).map_err(RunPatternError::Split)?;
        let rest = words.last().is_some_and(|w| w == "*");
        if rest {
            words.pop();
        }
        if words.is_empty() {
            return Err(if rest {
                RunPatternError::NoProgram
            } else {
                RunPatternError::Empty
            });
        }
        let last = words.len() - 1;
        for (i, word) in words.iter().enumerate() {
            if !word.contains('*') {
                continue;
            }
            let stem = word.trim_end_matches('*');
            if i == last && !rest && !stem.is_empty() && !stem.contains('*') {
                let mut fixed = words.clone();
                fixed[last] = stem.to_owned();
                return Err(RunPatternError::GluedStar {
                    word: word.clone(),
                    suggestion: format!("{} *", codec::render::quote_argv(&fixed)),
                });
            }
            return Err(RunPatternError::MisplacedStar { word: word.clone() });
        }
        Ok(RunPattern { words, rest })
    }

    /// Whether `argv` is the pattern's words, element for element (then anything at all
    /// after them, for a pattern ending in `*`).
    pub fn matches(&self, argv: &[String]) -> bool {
        if self.rest {
            argv.len() >= self.words.len() && argv[..self.words.len()] == self.words[..]
        } else {
            argv == self.words.as_slice()
        }
    }
}

impl std::str::FromStr for RunPattern {
    type Err = RunPatternError;

    fn from_str(s: &str) -> Result<RunPattern, RunPatternError> {
        RunPattern::parse(s)
    }
}

impl std::fmt::Display for RunPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&codec::render::quote_argv(&self.words))?;
        if self.rest {
            f.write_str(" *")?;
        }
        Ok(())
    }
}

impl Policy {
    pub fn new(mode: ApprovalMode) -> Policy {
        Policy {
            mode,
            allow_run: Vec::new(),
        }
    }

    pub fn verdict(&self, action: &Action) -> Verdict {
        if !self.mode.tools().contains(&action.name()) {
            return Verdict::Refuse;
        }
        match (self.mode, effect(action)) {
            (_, Effect::Read | Effect::Finish) => Verdict::Allow,
            (ApprovalMode::Plan, _) => Verdict::Refuse,
            (ApprovalMode::Auto, _) => Verdict::Allow,
            (ApprovalMode::Edits, Effect::Write) => Verdict::Allow,
            (ApprovalMode::Edits, Effect::Run) => match action {
                Action::Run { argv } if self.run_allowed(argv) => Verdict::Allow,
                _ => Verdict::Ask,
            },
            (ApprovalMode::Ask, _) => Verdict::Ask,
        }
    }

    fn run_allowed(&self, argv: &[String]) -> bool {
        self.allow_run.iter().any(|p| p.matches(argv))
    }
}

/// The user's answer to one preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    Yes,
    No,
    /// Stop the session.
    Quit,
}

/// Whoever approves actions the policy asks about.
pub trait Approver: std::fmt::Debug {
    /// `preview` is the diff or the argv, as the user should see it.
    fn approve(&mut self, action: &Action, preview: &str) -> Approval;
}

/// Answers from a list, in order; `No` once it runs out. For tests and `--yes`-like use.
#[derive(Debug, Clone, Default)]
pub struct ScriptedApprover {
    pub answers: VecDeque<Approval>,
    /// What was asked, as (tool name, preview).
    pub asked: Vec<(String, String)>,
}

impl ScriptedApprover {
    pub fn new(answers: impl IntoIterator<Item = Approval>) -> ScriptedApprover {
        ScriptedApprover {
            answers: answers.into_iter().collect(),
            asked: Vec::new(),
        }
    }
}

impl Approver for ScriptedApprover {
    fn approve(&mut self, action: &Action, preview: &str) -> Approval {
        self.asked
            .push((action.name().to_owned(), preview.to_owned()));
        self.answers.pop_front().unwrap_or(Approval::No)
    }
}

/// Asks on the terminal: `y/n/q` from stdin (end of input quits). The preview itself is
/// already on screen: the terminal view shows every preview, asked for or not.
#[derive(Debug, Default)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn approve(&mut self, action: &Action, _preview: &str) -> Approval {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{} — apply? [y/n/q] ", action.name());
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => Approval::Quit,
            Ok(_) => match line.trim() {
                "y" | "Y" | "yes" => Approval::Yes,
                "q" | "Q" | "quit" => Approval::Quit,
                _ => Approval::No,
            },
        }
    }
}
