//! The `tools` protocol: the model's own tool calls through its own chat template (Qwen's
//! Hermes `<tool_call>{json}</tool_call>`), the builtins offered as tools with their JSON
//! schemas, observations sent back as `tool` messages. Replies decode with the codec's Hermes
//! format into the same proposals as the other protocols; the files are shown as the whole
//! protocol shows them (unnumbered, so an `edit`'s `search` can be copied from them).

use codec::Registry;
use models::ToolSpec;

use crate::policy::ApprovalMode;
use crate::workspace::Workspace;

/// The system prompt: what the session is; the tools themselves reach the model through the
/// template.
pub fn system_prompt(mode: ApprovalMode) -> String {
    let mut s = String::from(
        "You are a coding agent working inside a repository. Act by calling the tools, one \
         call per reply; each result comes back to you.\n",
    );
    if mode == ApprovalMode::Plan {
        s.push_str("This session is read-only: you can look, not change anything.\n");
    } else {
        s.push_str(
            "To change a file, call edit with blocks whose search is exact lines copied from \
             the file, or create with the file's complete new content (it replaces a small \
             file whole). Call done with a one-line summary once the task is finished; it is \
             accepted only once the repository has changed.\n",
        );
    }
    s.push_str(crate::observe::UNTRUSTED_NOTE);
    s
}

/// The builtins `mode` offers, as the template's `tools`.
pub fn tools(mode: ApprovalMode) -> Vec<ToolSpec> {
    let offered = mode.tools();
    Registry::builtin()
        .tool_schemas()
        .into_iter()
        .filter(|t| offered.contains(&t.name.as_str()))
        .map(|t| ToolSpec {
            name: t.name,
            description: t.description,
            parameters: t.parameters,
        })
        .collect()
}

/// The first message: the files as they are, the task again, and what to do.
pub fn task_message(ws: &Workspace, task: &str, budget: usize) -> String {
    crate::whole::files_message(
        ws,
        task,
        budget,
        "Call the tools to do it: edit or create to change files, run to check, done when \
         finished.",
    )
}
