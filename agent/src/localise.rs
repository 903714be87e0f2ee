//! Localisation from a symptom, without a model call: what each command the task calls wrong
//! or failing runs — Python through [`crate::trace`], shell through [`crate::shtrace`] — for
//! the first message ([`crate::trace::section`]). Above both, so that neither needs the other.

use crate::probe::Probe;
use crate::workspace::Workspace;

/// Each command the task calls wrong or failing, traced
/// ([`crate::trace::functions`] for Python, else [`crate::shtrace::functions`]); those that ran no
/// function of the repository are left out.
pub fn trace(ws: &Workspace, probes: &[Probe]) -> Vec<crate::trace::Traced> {
    probes
        .iter()
        .filter(|p| (p.symptom || p.fails) && !(p.found || p.keep || p.plain || p.sibling))
        .map(|p| {
            let python = crate::trace::functions(ws, &p.argv);
            let shell = python.is_empty();
            crate::trace::Traced {
                command: p.command.clone(),
                functions: if shell {
                    crate::shtrace::functions(ws, &p.argv)
                } else {
                    python
                },
                shell,
            }
        })
        .filter(|t| !t.functions.is_empty())
        .collect()
}

/// The check as a command to trace, when the task names it as what is wrong or fails (`sh
/// test.sh fails`): [`crate::probe::commands`] leaves the check out of the probes, since it
/// runs anyway, but what it runs says as much as a probe's run.
pub fn check_probe(task: &str, ws: &Workspace, check: &[String]) -> Option<Probe> {
    crate::probe::commands(task, ws, None)
        .into_iter()
        .find(|p| p.argv == check && (p.symptom || p.fails))
}
