//! An output the task shows by example (`show it in the listing after the title, like "Dune
//! (1965) by Frank Herbert"`): once done, some program of the task prints it.
//!
//! The 1.5B on book-year-field added the field to the class and the loader, its check (the
//! repository's test of the old behaviour) passed, and the DONE was taken; the listing never
//! showed a year. The task named no command; it named "the listing", and listing.py is the
//! program that prints it. Such a script is run alone before the session and at DONE
//! ([`scripts_named_by_stem`]), and a DONE is refused (`example_missing`) while no run of the
//! task's programs prints the example — only an example every word of which the repository
//! holds, or held before the session changed a file (so its data can print it), for a program whose output before the session already
//! shared a line with it (so it is the program that prints such lines).

use crate::expect::squeezed;
use crate::probe::{Probe, ProbeRun};
use crate::workspace::Workspace;

/// Words that put an example right before a quoted text.
const EXAMPLE_WORDS: &[&str] = &[
    "like",
    "e.g.",
    "e.g.,",
    "eg",
    "such as",
    "for example",
    "as in",
];

/// The texts `task` quotes (in double quotes, six characters or more) right after an example
/// word ([`EXAMPLE_WORDS`]).
pub fn examples(task: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = task;
    while let Some(open) = rest.find(['"', '\u{201c}']) {
        let before = rest[..open]
            .trim_end()
            .trim_end_matches([',', ':'])
            .to_lowercase();
        let after = &rest[open + rest[open..].chars().next().map_or(1, char::len_utf8)..];
        let Some(close) = after.find(['"', '\u{201d}']) else {
            break;
        };
        let text = &after[..close];
        let introduced = EXAMPLE_WORDS.iter().any(|w| {
            before.ends_with(w)
                && before[..before.len() - w.len()]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric())
        });
        if introduced && text.trim().chars().count() >= 6 && !text.contains('\n') {
            out.push(text.trim().to_owned());
        }
        rest = &after[close + after[close..].chars().next().map_or(1, char::len_utf8)..];
    }
    out
}

/// The words of `text`: runs of letters and digits.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Scripts of the repository's top level whose stem is a word of `task` (`the listing` →
/// listing.py), when the task shows an output by example and no probe runs them yet: each
/// run alone by its interpreter, as a plain probe ([`Probe::plain`]). At most one.
pub fn scripts_named_by_stem(task: &str, ws: &Workspace, probes: &[Probe]) -> Vec<Probe> {
    if examples(task).is_empty() {
        return Vec::new();
    }
    let words = tokens(task);
    let files = ws.files("").unwrap_or_default();
    for file in files.iter().filter(|f| !f.contains('/')) {
        let Some((stem, _)) = file.rsplit_once('.') else {
            continue;
        };
        let Some(interp) = crate::asks::interpreter(file) else {
            continue;
        };
        if stem.chars().count() < 4 || !words.iter().any(|w| w == &stem.to_lowercase()) {
            continue;
        }
        let argv = vec![interp.to_owned(), file.clone()];
        let ran = probes
            .iter()
            .any(|p| p.argv.iter().any(|a| crate::targets::bare(a) == file));
        if ran || crate::probe::is_test(&argv) {
            continue;
        }
        if let Some(mut p) = Probe::to_keep(argv) {
            p.keep = false;
            p.plain = true;
            return vec![p];
        }
    }
    Vec::new()
}

/// The examples of `task` ([`examples`]) no run of `now` prints, where every word of the
/// example is in some file of the repository (`files`: their contents) and some command
/// printed a line sharing two of its words before the session: each with the runs of those
/// commands now. The task's own commands and the scripts run alone count; found tests and
/// derived runs do not.
pub fn unshown<'r>(
    task: &str,
    files: &[String],
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(String, Vec<&'r ProbeRun>)> {
    let own = |r: &ProbeRun| {
        probes
            .iter()
            .any(|p| p.command == r.command && !p.found && !p.keep && !p.sibling)
    };
    let corpus: std::collections::BTreeSet<String> = files.iter().flat_map(|f| tokens(f)).collect();
    let mut out = Vec::new();
    for example in examples(task) {
        let words = tokens(&example);
        if words.is_empty() || !words.iter().all(|w| corpus.contains(w)) {
            continue;
        }
        let related: Vec<&ProbeRun> = before
            .iter()
            .filter(|b| own(b))
            .filter(|b| {
                b.output.lines().any(|l| {
                    let line = tokens(l);
                    words
                        .iter()
                        .filter(|w| w.chars().count() >= 3 && line.contains(w))
                        .count()
                        >= 2
                })
            })
            .collect();
        if related.is_empty() {
            continue;
        }
        let shown = now
            .iter()
            .filter(|r| own(r))
            .any(|r| squeezed(&r.output).contains(&squeezed(&example)));
        if !shown {
            let runs: Vec<&ProbeRun> = now
                .iter()
                .filter(|r| related.iter().any(|b| b.command == r.command))
                .collect();
            out.push((example, runs));
        }
    }
    out
}

/// The observation of a DONE refused because no program prints the task's example
/// (`example_missing`).
pub fn refusal(unshown: &[(String, Vec<&ProbeRun>)]) -> crate::act::Observation {
    let texts: Vec<String> = unshown.iter().map(|(t, _)| format!("\"{t}\"")).collect();
    crate::probe::runs_refusal(
        unshown.iter().flat_map(|(_, runs)| runs.iter().copied()),
        format!(
            "DONE refused: the task shows the output as {}, and no program of the task prints it \
             yet",
            texts.join(" and ")
        ),
        "change the code that prints those lines so that its output matches the example, then \
         DONE",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    const TASK: &str = "Add a year field to Book, read it from books.csv, and show it in the \
                        listing after the title, like \"Dune (1965) by Frank Herbert\". A book \
                        whose year is unknown is listed as before.";

    fn run(command: &str, output: &str) -> ProbeRun {
        ProbeRun {
            command: command.to_owned(),
            code: Some(0),
            timed_out: false,
            output: output.to_owned(),
        }
    }

    #[test]
    fn examples_are_quoted_texts_after_an_example_word() {
        assert_eq!(examples(TASK), ["Dune (1965) by Frank Herbert"]);
        assert_eq!(
            examples("Print sizes, e.g. \"12 KiB\", or such as \"3 MiB\"."),
            ["12 KiB"]
        );
        assert!(examples("It prints \"Dune by Frank Herbert\" twice.").is_empty());
        assert!(examples("Make it unlike \"Dune by Frank\".").is_empty());
    }

    #[test]
    fn the_listing_is_run_and_must_show_the_example() {
        let (_d, ws) = repo(&[
            ("listing.py", "print('Dune by Frank Herbert')\n"),
            ("books.csv", "title,author,year\nDune,Frank Herbert,1965\n"),
            ("test_listing.py", "import listing\n"),
        ]);
        let probes = scripts_named_by_stem(TASK, &ws, &[]);
        assert_eq!(probes.len(), 1);
        assert_eq!(probes[0].command, "python3 listing.py");
        assert!(probes[0].plain);
        let files = vec![
            "title,author,year\nDune,Frank Herbert,1965\n".to_owned(),
            "print('Dune by Frank Herbert')\n".to_owned(),
        ];
        let before = [run("python3 listing.py", "Dune by Frank Herbert\n")];
        let same = unshown(TASK, &files, &probes, &before, &before);
        assert_eq!(same.len(), 1);
        assert_eq!(same[0].0, "Dune (1965) by Frank Herbert");
        assert!(
            refusal(&same)
                .summary
                .contains("the task shows the output as \"Dune (1965) by Frank Herbert\"")
        );
        let done = [run("python3 listing.py", "Dune  (1965) by Frank Herbert\n")];
        assert!(unshown(TASK, &files, &probes, &before, &done).is_empty());
        // A year the repository does not hold: an illustration, not a promise.
        let no_year = vec!["title,author\nDune,Frank Herbert\n".to_owned()];
        assert!(unshown(TASK, &no_year, &probes, &before, &before).is_empty());
        // A program whose output had nothing of the example: not the one that prints it.
        let other = [run("python3 listing.py", "3 books\n")];
        assert!(unshown(TASK, &files, &probes, &other, &other).is_empty());
        // No example in the task: no script is run for it.
        assert!(scripts_named_by_stem("Fix the listing.", &ws, &[]).is_empty());
    }
}
