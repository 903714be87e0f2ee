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
    /// Commands `edits` mode runs unasked: the argv as it would be quoted (`cargo test`), with
    /// a trailing `*` matching any rest (`cargo test*`).
    pub allow_run: Vec<String>,
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
        let line = codec::render::quote_argv(argv);
        self.allow_run.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => line.starts_with(prefix),
            None => line == *p,
        })
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
