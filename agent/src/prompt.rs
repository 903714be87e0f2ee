//! The fixed parts of a session's prompt and decoding, all generated from the codec's tool
//! table filtered by the approval mode: the system prompt, the grammar, the echo set.

use std::fmt::Write;

use codec::Registry;
use codec::registry::{BUILTINS, PromptStyle};
use models::GrammarSpec;

use crate::policy::ApprovalMode;
use crate::workspace::Workspace;

/// `--grammar`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrammarChoice {
    Off,
    /// The grammar switches on at a verb.
    Lazy,
    /// Every token is constrained: every reply decodes, and has an action.
    Strict,
}

impl GrammarChoice {
    pub fn parse(s: &str) -> Option<GrammarChoice> {
        match s {
            "off" => Some(GrammarChoice::Off),
            "lazy" => Some(GrammarChoice::Lazy),
            "strict" => Some(GrammarChoice::Strict),
            _ => None,
        }
    }
}

/// How a session asks the model to act (`--protocol`; a profile's `agent_protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Verb lines and SEARCH/REPLACE blocks; files shown numbered like READ's output.
    #[default]
    Text,
    /// Files shown as they are; a file is changed by writing it whole after its path
    /// (`crate::whole`); the other actions are verb lines.
    Whole,
    /// The model's own tool calls through its chat template (`crate::calls`).
    Tools,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Text, Protocol::Whole, Protocol::Tools];

    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.as_str() == s)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Protocol::Text => "text",
            Protocol::Whole => "whole",
            Protocol::Tools => "tools",
        }
    }

    /// The system prompt for `mode` (`style` shapes the text protocol's).
    pub fn system_prompt(self, mode: ApprovalMode, style: PromptStyle) -> String {
        match self {
            Protocol::Text => system_prompt(mode, style),
            Protocol::Whole => crate::whole::system_prompt(mode),
            Protocol::Tools => crate::calls::system_prompt(mode),
        }
    }

    /// The first user message, its start context within `budget` characters (`layout`:
    /// [`crate::Config::layout`], the whole protocol's).
    pub fn task_message(
        self,
        ws: &Workspace,
        task: &str,
        budget: usize,
        layout: crate::whole::Layout,
    ) -> String {
        match self {
            Protocol::Text => task_message(ws, task, budget),
            Protocol::Whole => crate::whole::task_message(ws, task, budget, layout),
            Protocol::Tools => crate::calls::task_message(ws, task, budget),
        }
    }

    /// The start context's size when the user sets none.
    pub const fn default_context_budget(self) -> usize {
        match self {
            Protocol::Text => DEFAULT_CONTEXT_BUDGET,
            Protocol::Whole | Protocol::Tools => crate::whole::DEFAULT_CONTEXT_BUDGET,
        }
    }

    /// The grammar for `mode` as `choice` says; the whole protocol's file blocks are free
    /// text, and the tools protocol is the model's own format, so they have none.
    pub fn grammar(self, mode: ApprovalMode, choice: GrammarChoice) -> Option<GrammarSpec> {
        match self {
            Protocol::Text => grammar(mode, choice),
            Protocol::Whole | Protocol::Tools => None,
        }
    }

    /// The tools the chat template shows (only the tools protocol has any).
    pub fn tools(self, mode: ApprovalMode) -> Vec<models::ToolSpec> {
        match self {
            Protocol::Tools => crate::calls::tools(mode),
            Protocol::Text | Protocol::Whole => Vec::new(),
        }
    }

    /// The role observations go back to the model in.
    pub const fn observation_role(self) -> &'static str {
        match self {
            Protocol::Tools => "tool",
            Protocol::Text | Protocol::Whole => "user",
        }
    }

    /// How a reply is decoded while it streams (the whole protocol's once it is finished).
    pub const fn decoding(self) -> codec::Mode {
        match self {
            Protocol::Tools => codec::Mode::Only(codec::FormatId::Hermes),
            Protocol::Text | Protocol::Whole => codec::Mode::Only(codec::FormatId::Text),
        }
    }

    /// A fresh history for a session in this protocol.
    pub fn history(
        self,
        mode: ApprovalMode,
        system: String,
        task: String,
    ) -> crate::history::History {
        let mut h = crate::history::History::new(system, task);
        h.tools = self.tools(mode);
        h.observation_role = self.observation_role();
        h
    }
}

pub use codec::echo::Echoes;
pub use codec::registry::{EXAMPLE_REPLACE, EXAMPLE_SEARCH};

pub use crate::context::{DEFAULT_CONTEXT_BUDGET, task_message};

/// The system prompt for `mode`: the registry's verb lines for the tools the mode offers, in
/// the profile's style (`compact`: syntax lines only; `example`: one worked exchange added).
pub fn system_prompt(mode: ApprovalMode, style: PromptStyle) -> String {
    let tools = mode.tools();
    let mut s = String::from(
        "You are a coding agent working inside a repository. Act by writing commands, one per \
         line, each starting at the beginning of a line:\n",
    );
    for t in BUILTINS.iter().filter(|t| tools.contains(&t.name)) {
        if style == PromptStyle::Compact {
            let _ = writeln!(s, "{}", t.syntax);
        } else {
            let _ = writeln!(s, "{}  {}", t.syntax, t.hint);
        }
        if t.name == "edit" {
            let _ = writeln!(
                s,
                "<<<<<<< SEARCH\n{EXAMPLE_SEARCH}=======\n{EXAMPLE_REPLACE}>>>>>>> REPLACE"
            );
        }
    }
    if tools.contains(&"read") {
        let sep = crate::act::NUMBER_SEPARATOR.trim_end();
        let _ = write!(
            s,
            "READ shows each line after its line number and `{sep}`, like `  7{sep} x = 1`; \
             the numbers are not part of the file."
        );
        if tools.contains(&"edit") {
            s.push_str(" SEARCH lines must be copied without them.");
        }
        s.push('\n');
    }
    if tools.contains(&"create") {
        let _ = writeln!(
            s,
            "CREATE on an existing file of at most {} lines replaces the whole file with the \
             block's text.",
            crate::act::WHOLE_FILE_LINES
        );
    }
    if mode == ApprovalMode::Plan {
        s.push_str("This session is read-only: you can look, not change anything.\n");
    } else {
        s.push_str("DONE is accepted only once the repository has changed.\n");
    }
    s.push_str("Quote a path with spaces in single quotes.");
    if tools.contains(&"run") {
        s.push_str(" RUN takes shell quoting, but no shell runs it.");
    }
    s.push_str(
        "\nWrite at most one short sentence before your commands. When the task is finished, \
         write DONE with a one-line summary.\n",
    );
    if style == PromptStyle::Example && tools.contains(&"edit") {
        s.push_str(codec::registry::WORKED_EXAMPLE);
        s.push('\n');
    }
    s.push_str(crate::observe::UNTRUSTED_NOTE);
    s
}

/// The text-protocol grammar restricted to `mode`'s tools, applied as `choice` says.
pub fn grammar(mode: ApprovalMode, choice: GrammarChoice) -> Option<GrammarSpec> {
    let gbnf = Registry::builtin().text_protocol_gbnf();
    let tools = mode.tools();
    let alternatives: Vec<String> = BUILTINS
        .iter()
        .filter(|t| tools.contains(&t.name))
        .map(|t| format!("{}-action", t.name))
        .collect();
    // Replace the `action` rule with the mode's alternatives; every other rule stays.
    let gbnf: String = gbnf
        .lines()
        .map(|l| {
            if l.starts_with("action ::=") {
                format!("action ::= {}", alternatives.join(" | "))
            } else if l.starts_with("strict-action ::=") {
                let strict: Vec<String> = alternatives
                    .iter()
                    .map(|a| a.replace("-action", "-strict"))
                    .collect();
                format!("strict-action ::= {}", strict.join(" | "))
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    match choice {
        GrammarChoice::Off => None,
        // Every turn must act: at most two short lines of prose, then an action (the system
        // prompt asks for one short sentence before the commands). The lead lines are
        // bounded, so a model cannot spend its whole reply on one line of prose.
        // The registry's `acting` rule: at most two bounded lead lines, then an action.
        GrammarChoice::Strict => Some(GrammarSpec::Strict {
            gbnf,
            root: "acting".to_owned(),
        }),
        GrammarChoice::Lazy => Some(GrammarSpec::Lazy {
            gbnf: format!("{gbnf}\nlazy-root ::= action (prose | action)*\n"),
            root: "lazy-root".to_owned(),
            triggers: BUILTINS
                .iter()
                .filter(|t| tools.contains(&t.name))
                .map(|t| format!("{} ", t.verb))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The profile's prompt style shapes the agent's system prompt as it shapes the
    /// gateway's: compact drops the hints, example adds the worked exchange.
    #[test]
    fn the_prompt_style_shapes_the_system_prompt() {
        let full = system_prompt(ApprovalMode::Auto, PromptStyle::Full);
        let compact = system_prompt(ApprovalMode::Auto, PromptStyle::Compact);
        let example = system_prompt(ApprovalMode::Auto, PromptStyle::Example);
        assert!(full.contains("READ path[:start-end]  show a file"));
        assert!(compact.contains("READ path[:start-end]\n") && !compact.contains("show a file"));
        assert!(compact.len() < full.len());
        assert!(example.starts_with(&full[..full.len() - crate::observe::UNTRUSTED_NOTE.len()]));
        assert!(example.contains(codec::registry::WORKED_EXAMPLE));
        // Plan mode offers no edit, so no edit example either.
        assert!(!system_prompt(ApprovalMode::Plan, PromptStyle::Example).contains("EDIT"));
    }

    /// The model is told READ's numbers are not the file's, that SEARCH leaves them out, that
    /// CREATE replaces a small file whole, and when DONE is accepted; plan mode hears only
    /// what applies to it.
    #[test]
    fn the_prompt_explains_read_numbers_whole_file_create_and_done() {
        for style in PromptStyle::ALL {
            let auto = system_prompt(ApprovalMode::Auto, style);
            assert!(auto.contains("like `  7| x = 1`; the numbers are not part of the file"));
            assert!(auto.contains("SEARCH lines must be copied without them"));
            assert!(auto.contains("CREATE on an existing file of at most 200 lines replaces"));
            assert!(auto.contains("DONE is accepted only once the repository has changed"));
            let plan = system_prompt(ApprovalMode::Plan, style);
            assert!(plan.contains("the numbers are not part of the file"));
            assert!(!plan.contains("SEARCH") && !plan.contains("CREATE"));
            assert!(!plan.contains("DONE is accepted only"));
        }
    }

    /// The agent's system prompt teaches the tools in the registry's own words: with every
    /// tool offered, each line of the registry's prompt appears in it.
    #[test]
    fn full_mode_prompt_has_every_registry_line() {
        let ours = system_prompt(ApprovalMode::Auto, PromptStyle::Full);
        for line in Registry::builtin().system_prompt().lines() {
            assert!(ours.contains(line), "missing: {line}");
        }
        let plan = system_prompt(ApprovalMode::Plan, PromptStyle::Full);
        assert!(!plan.contains("EDIT") && !plan.contains("RUN ") && plan.contains("GREP"));
    }
}
