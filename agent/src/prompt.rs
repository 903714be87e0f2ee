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

pub use codec::echo::Echoes;
pub use codec::registry::{EXAMPLE_REPLACE, EXAMPLE_SEARCH};

/// Files listed in the repository overview before it says "and N more".
const OVERVIEW_FILES: usize = 40;

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
    if mode == ApprovalMode::Plan {
        s.push_str("This session is read-only: you can look, not change anything.\n");
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

/// The first user message: the task and a compact overview of the repository.
pub fn task_message(ws: &Workspace, task: &str) -> String {
    let files = ws.files("").unwrap_or_default();
    let mut s = format!("Task: {task}\n\nRepository files ({}):\n", files.len());
    for f in files.iter().take(OVERVIEW_FILES) {
        s.push_str(f);
        s.push('\n');
    }
    if files.len() > OVERVIEW_FILES {
        let _ = writeln!(
            s,
            "… and {} more (use GLOB or LIST)",
            files.len() - OVERVIEW_FILES
        );
    }
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
