//! What the task says one of its commands prints once the work is done, checked at DONE:
//! `` `sh todo.sh -c notes.txt` should print only the number of TODO lines (2 for
//! notes.txt)`` gives `2`, the whole output; `` `python3 count.py` should print 3`` gives `3`,
//! somewhere in the output.
//!
//! The value is read off the task's words, never guessed: a number or a quoted text right
//! after a word that says what a command prints, or a number in brackets naming the command's
//! own file (`(2 for notes.txt)`), in the sentence that writes the command, after it. Like
//! the rest of [`crate::asks`], the check only refuses a DONE (fed back, never a stop).

use crate::probe::{Probe, ProbeRun, sentence_bounds, word_spans};

/// Words after which a sentence says what a command prints.
const PRINT_WORDS: &[&str] = &[
    "print", "prints", "printing", "output", "outputs", "show", "shows", "say", "says", "display",
    "displays", "echo", "echoes",
];

/// Words before a print word that make what follows what the command should print (not
/// what it prints now, the symptom).
const MODALS: &[&str] = &["should", "must", "shall", "will", "would", "to", "always"];

/// Words between a print word and its value that make the value the whole output.
const WHOLE_WORDS: &[&str] = &["only", "just", "exactly"];

/// Words that may follow a printed number without making it a count of something: `should
/// print 2 for notes.txt`, `3 again`, `3 but prints 4`.
const AFTER_VALUE: &[&str] = &[
    "for", "with", "on", "when", "if", "and", "but", "again", "now", "instead", "then", "as",
    "once", "here", "there", "not", "or",
];

/// Words that say what follows is not printed.
const NOT_WORDS: &[&str] = &[
    "not", "no", "never", "nothing", "instead", "of", "than", "doesn't", "don't", "isn't",
];

/// A value the task says a command prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub command: String,
    pub value: String,
    /// The value is all the command prints (`only`, `just`, `exactly`), blanks aside.
    pub whole: bool,
}

/// A number as a task writes one: digits, one inner dot, a leading minus.
fn number(word: &str) -> Option<&str> {
    let w = word.trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
    let digits = w.strip_prefix('-').unwrap_or(w);
    let ok = !digits.is_empty()
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.ends_with(|c: char| c.is_ascii_digit())
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.matches('.').count() <= 1;
    ok.then_some(w)
}

/// A text in double quotes or backticks that starts `rest` (after blanks).
fn quoted_start(rest: &str) -> Option<&str> {
    let rest = rest.trim_start();
    let close = match rest.chars().next()? {
        '"' => '"',
        '`' => '`',
        _ => return None,
    };
    let inner = &rest[1..];
    let end = inner.find(close)?;
    let text = &inner[..end];
    (!text.trim().is_empty() && !text.contains('\n')).then_some(text)
}

/// What `task` says `probe`'s command prints when done, if it says it in the sentence that
/// writes the command (see the module's documentation). Only the task's own commands (not
/// found tests or derived runs) are read.
pub fn expected(task: &str, probe: &Probe) -> Option<Expected> {
    if probe.found || probe.keep || probe.plain || probe.sibling {
        return None;
    }
    let at = task.find(&probe.command)?;
    let sentence = sentence_bounds(task)
        .into_iter()
        .find(|r| r.contains(&at))?;
    let after_command = at + probe.command.len();
    let rest = &task[after_command..sentence.end];
    let offset = after_command;
    let lower = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase()
    };
    // Without marks standing alone (the backtick that closes the command).
    let words: Vec<(usize, &str)> = word_spans(rest)
        .into_iter()
        .filter(|(_, w)| !lower(w).is_empty())
        .collect();
    // What it should print, not what it prints now (the symptom): a print word after a
    // modal, or `make COMMAND print …`; not after a negation.
    let makes = task[sentence.start..at]
        .split_whitespace()
        .rfind(|w| !lower(w).is_empty())
        .is_some_and(|w| lower(w) == "make");
    let k = (0..words.len()).find(|&k| {
        PRINT_WORDS.contains(&lower(words[k].1).as_str())
            && match k {
                0 => makes,
                _ => MODALS.contains(&lower(words[k - 1].1).as_str()),
            }
    })?;
    if k > 1 && NOT_WORDS.contains(&lower(words[k - 2].1).as_str()) {
        return None;
    }
    let mut whole = false;
    let mut j = k + 1;
    while let Some((_, w)) = words.get(j)
        && WHOLE_WORDS.contains(&lower(w).as_str())
    {
        whole = true;
        j += 1;
    }
    let make = |value: &str, whole: bool| Expected {
        command: probe.command.clone(),
        value: value.to_owned(),
        whole,
    };
    // Right after the print word: a number or a quoted text.
    if let Some((at_value, w)) = words.get(j) {
        if NOT_WORDS.contains(&lower(w).as_str()) {
            return None;
        }
        // A number, unless a noun counts by it (`should print 3 lines`: how many, not what).
        let counts = words.get(j + 1).is_some_and(|(_, next)| {
            let next = lower(next);
            !w.ends_with([',', '.', ';', ':', '!', '?'])
                && next.chars().all(char::is_alphabetic)
                && !AFTER_VALUE.contains(&next.as_str())
        });
        if let Some(n) = number(w)
            && !counts
        {
            return Some(make(n, whole));
        }
        if let Some(text) = quoted_start(&task[offset + at_value..sentence.end]) {
            return Some(make(text, whole));
        }
    }
    // Later in the sentence: `(N)` or `(N for FILE)`, FILE one of the command's words.
    let from = words.get(k).map_or(0, |(a, _)| *a);
    let tail = &rest[from..];
    let mut search = tail;
    while let Some(open) = search.find('(') {
        let inside = &search[open + 1..];
        let Some(close) = inside.find(')') else { break };
        let group: Vec<&str> = inside[..close].split_whitespace().collect();
        let names_command = |f: &str| {
            let f = f.trim_matches(|c: char| matches!(c, '`' | '"' | '\''));
            probe.argv.iter().any(|a| a == f)
        };
        match group.as_slice() {
            [n] | [n, "for", _] | [n, "with", _] | [n, "on", _]
                if number(n).is_some()
                    && (group.len() == 1 || names_command(group[group.len() - 1])) =>
            {
                return number(n).map(|n| make(n, whole));
            }
            _ => {}
        }
        search = &inside[close + 1..];
    }
    None
}

/// Whether `output` shows `e`: all of it, blanks aside, when whole; else somewhere, a number
/// standing alone (not part of a longer number).
pub fn shows(output: &str, e: &Expected) -> bool {
    let out = output.trim();
    if e.whole {
        return out == e.value
            || out.split_whitespace().collect::<Vec<_>>()
                == e.value.split_whitespace().collect::<Vec<_>>();
    }
    if number(&e.value).is_none() {
        return output.contains(&e.value);
    }
    let bytes = output.as_bytes();
    let digit = |b: Option<&u8>| b.is_some_and(u8::is_ascii_digit);
    output.match_indices(&e.value).any(|(i, _)| {
        let end = i + e.value.len();
        let glued_before = i > 0
            && (bytes[i - 1].is_ascii_digit()
                || (bytes[i - 1] == b'.' && i > 1 && bytes[i - 2].is_ascii_digit()));
        let glued_after =
            digit(bytes.get(end)) || (bytes.get(end) == Some(&b'.') && digit(bytes.get(end + 1)));
        !glued_before && !glued_after
    })
}

/// The task's commands whose run now does not show what the task says they print: each with
/// what was expected and the run.
pub fn unmet<'r>(
    task: &str,
    probes: &[Probe],
    now: &'r [ProbeRun],
) -> Vec<(Expected, &'r ProbeRun)> {
    probes
        .iter()
        .filter_map(|p| {
            let e = expected(task, p)?;
            let run = now.iter().find(|r| r.command == p.command)?;
            (run.timed_out || !shows(&run.output, &e)).then_some((e, run))
        })
        .collect()
}

/// The observation of a DONE refused because a command does not print what the task says it
/// prints (`expected_output`).
pub fn refusal(unmet: &[(Expected, &ProbeRun)]) -> crate::act::Observation {
    let said: Vec<String> = unmet
        .iter()
        .map(|(e, _)| {
            format!(
                "`{}` should print {}\"{}\"",
                e.command,
                if e.whole { "only " } else { "" },
                e.value
            )
        })
        .collect();
    crate::probe::runs_refusal(
        unmet.iter().map(|(_, r)| *r),
        format!(
            "DONE refused: the task says {}, and it does not",
            said.join(" and ")
        ),
        "change the code until the command prints what the task says, then DONE",
    )
}

/// Words that say a command's output leaves out a text the task quotes.
const MISSING_WORDS: &[&str] = &[
    "missing",
    "drop",
    "drops",
    "dropped",
    "lost",
    "lose",
    "loses",
    "omit",
    "omits",
    "omitted",
    "truncated",
    "truncates",
    "absent",
    "disappear",
    "disappears",
    "vanish",
    "vanishes",
    "never",
];

/// The texts `task` quotes (double quotes, six characters or more) as left out of
/// `probe`'s output: in the sentence that writes the command, or the next, beside a word
/// that says so ([`MISSING_WORDS`]). `` `python3 notice.py` drops text: "without a fine." and
/// the closing "Thank you." never appear in the box`` gives both.
pub fn missing(task: &str, probe: &Probe) -> Vec<String> {
    let Some(text) = crate::probe::symptom_sentences(task, probe) else {
        return Vec::new();
    };
    let at = task.find(&probe.command).unwrap_or(0);
    let says = word_spans(text).into_iter().any(|(_, w)| {
        let w = w
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        MISSING_WORDS.contains(&w.as_str())
    });
    let mut out = if says {
        crate::probe::quoted_near(task, at)
    } else {
        Vec::new()
    };
    out.extend(nothing_for(text));
    out
}

/// Words that end the phrase after `nothing for`.
const PHRASE_ENDS: &[&str] = &[
    "although", "though", "but", "because", "while", "when", "even", "since", "yet", "and",
];

/// What a sentence says a command prints nothing for: `orders nothing for the AA batteries,
/// although only 3 are left` gives `AA batteries` (the article off, up to a comma or a word
/// that ends the phrase, at most five words). The 1.5B on restock-packs made restock.py
/// print `nothing to order` at all, its check passing.
fn nothing_for(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    let at = lower.find("nothing for ")? + "nothing for ".len();
    let rest = &sentence[at..];
    let mut words: Vec<&str> = Vec::new();
    for w in rest.split_whitespace() {
        let plain = w.trim_matches(|c: char| !c.is_alphanumeric());
        if PHRASE_ENDS.contains(&plain.to_lowercase().as_str()) || plain.is_empty() {
            break;
        }
        let ends = w.ends_with([',', '.', ';', ':', '!', '?', ')']);
        words.push(plain);
        if ends || words.len() > 5 {
            break;
        }
    }
    if matches!(
        words.first().map(|w| w.to_lowercase()).as_deref(),
        Some("the" | "a" | "an")
    ) {
        words.remove(0);
    }
    (!words.is_empty() && words.len() <= 5).then(|| words.join(" "))
}

/// The texts the task says a command leaves out ([`missing`]) that it left out before the
/// session and still leaves out, each with the run: the 1.5B on notice-wrap.
pub fn still_missing<'r>(
    task: &str,
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(String, &'r ProbeRun)> {
    let mut out = Vec::new();
    for p in probes {
        let (Some(b), Some(n)) = (
            before.iter().find(|r| r.command == p.command),
            now.iter().find(|r| r.command == p.command),
        ) else {
            continue;
        };
        for text in missing(task, p) {
            if !crate::probe::prints(&b.output, &text) && !crate::probe::prints(&n.output, &text) {
                out.push((text, n));
            }
        }
    }
    out
}

/// `text` with every run of blanks one space: a text wrapped over lines in a data file is
/// the same text.
pub(crate) fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A text the task says a command leaves out ([`missing`]) that a change takes out of the
/// repository: some file of `changes` (path, before, after) held it, and neither any file
/// after the change nor any other file of the repository (`others`, their contents) holds it.
/// The text is what the output must show; taking it out of the input is no fix. The 1.5B on
/// notice-wrap deleted "without a fine." and "Thank you." from notice.txt, and wrote the file
/// back so, turn after turn. `(text, path)` of the first such.
pub fn removed_missing(
    task: &str,
    probes: &[Probe],
    changes: &[(&str, Option<&str>, Option<&str>)],
    others: &[String],
) -> Option<(String, String)> {
    let texts: Vec<String> = probes.iter().flat_map(|p| missing(task, p)).collect();
    for text in texts {
        let t = squeezed(&text);
        let holds = |c: &str| squeezed(c).contains(&t);
        let Some((path, _, _)) = changes.iter().find(|(_, pre, _)| pre.is_some_and(&holds)) else {
            continue;
        };
        let kept = changes.iter().any(|(_, _, post)| post.is_some_and(&holds))
            || others.iter().any(|o| holds(o));
        if !kept {
            return Some((text, (*path).to_owned()));
        }
    }
    None
}

/// What the model is told of a change refused by [`removed_missing`].
pub fn removed_refusal(text: &str, path: &str) -> crate::act::Observation {
    crate::act::Observation::error(
        format!(
            "{path} not written: it holds \"{text}\", which the task says the output leaves \
             out; the text is to be shown, not taken out"
        ),
        Some(&format!(
            "leave {path} as it is, and change the code that reads or prints it so that the \
             whole text appears"
        )),
    )
}

/// The observation of a DONE refused because a command still leaves out a text the task
/// says it leaves out (`output_missing`).
pub fn missing_refusal(missing: &[(String, &ProbeRun)]) -> crate::act::Observation {
    let texts: Vec<String> = missing.iter().map(|(t, _)| format!("\"{t}\"")).collect();
    crate::probe::runs_refusal(
        missing.iter().map(|(_, r)| *r),
        format!(
            "DONE refused: the task says the output leaves out {}, and it still does",
            texts.join(" and ")
        ),
        "find where the code loses that text and change it until the command prints it, then \
         DONE",
    )
}

/// The value the task says `probe`'s command, a symptom, prints now and calls wrong
/// ([`crate::probe::value_called_wrong`]). `` `sh latest.sh` says the latest release is
/// v1.9.2, but v1.10.0 is newer`` gives `v1.9.2`; `sets the timer for 1800 s (0:30:00)
/// instead of …` gives `0:30:00`.
pub fn wrong_value(task: &str, probe: &Probe) -> Option<String> {
    if !probe.symptom || probe.found || probe.keep || probe.plain || probe.sibling {
        return None;
    }
    crate::probe::value_called_wrong(task, &probe.command)
}

/// `output` holds `value` with no digit (or a dot and a digit) running on at either side.
pub(crate) fn holds_value(output: &str, value: &str) -> bool {
    output.match_indices(value).any(|(i, _)| {
        let before = output[..i].chars().next_back();
        let rest = &output[i + value.len()..];
        let mut after = rest.chars();
        let runs_on = match after.next() {
            Some(c) if c.is_ascii_digit() => true,
            Some('.') => after.next().is_some_and(|c| c.is_ascii_digit()),
            _ => false,
        };
        !before.is_some_and(|c| c.is_ascii_digit()) && !runs_on
    })
}

/// The values the task says a command prints and calls wrong ([`wrong_value`]) that it
/// printed before the session and prints still: the 1.5B on latest-release-sh made it print
/// `vv1.9.2`, its check passed, and the DONE was taken.
pub fn still_wrong<'r>(
    task: &str,
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(String, &'r ProbeRun)> {
    called_wrong(task, probes, before, now)
        .filter(|(value, b, n)| holds_value(&b.output, value) && holds_value(&n.output, value))
        .map(|(value, _, n)| (value, n))
        .collect()
}

/// Each command the task says prints a value wrong ([`wrong_value`]), with that value and
/// its runs before the session and now.
fn called_wrong<'a, 'r>(
    task: &'a str,
    probes: &'a [Probe],
    before: &'a [ProbeRun],
    now: &'r [ProbeRun],
) -> impl Iterator<Item = (String, &'a ProbeRun, &'r ProbeRun)> + use<'a, 'r> {
    probes.iter().filter_map(move |p| {
        Some((
            wrong_value(task, p)?,
            before.iter().find(|r| r.command == p.command)?,
            now.iter().find(|r| r.command == p.command)?,
        ))
    })
}

/// The values the task gives as right for a command it says prints a wrong one
/// ([`crate::probe::value_called_right`]) that the command did not print before the session
/// and does not print now. The 1.5B on latest-release-sh (session 24) made `sh latest.sh`
/// print `latest release: v`: the wrong value gone, no right one, its check passing.
pub fn right_missing<'r>(
    task: &str,
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(String, &'r ProbeRun)> {
    called_wrong(task, probes, before, now)
        .filter_map(|(_, b, n)| {
            let right = crate::probe::value_called_right(task, &b.command)?;
            (!holds_value(&b.output, &right) && !holds_value(&n.output, &right))
                .then_some((right, n))
        })
        .collect()
}

/// The observation of a DONE refused by [`right_missing`] (`right_value_missing`).
pub fn right_refusal(missing: &[(String, &ProbeRun)]) -> crate::act::Observation {
    value_refusal(
        missing,
        "does not print",
        "DONE refused: the task gives the right value, and ",
    )
}

/// A DONE refused over one value per command: `lead`, then `` `command` {verb} {value}`` for
/// each, and what to do.
fn value_refusal(
    values: &[(String, &ProbeRun)],
    verb: &str,
    lead: &str,
) -> crate::act::Observation {
    crate::probe::each_refusal(
        values,
        |(_, r)| *r,
        |(v, r)| format!("`{}` {verb} {v}", r.command),
        lead,
        "find the code that computes that value and change it until the command prints the \
         right one, then DONE",
    )
}

/// The commands the task says print one value wrong ([`wrong_value`]) that printed it on one
/// line before the session and print more lines now: the right value takes the wrong one's
/// place, and nothing else is printed. The 1.5B on latest-release-sh made `tail -n 1` into
/// `head -n -1`: `latest release: v1.10.0` came first only because the versions sort as
/// text, three stray versions followed, and its check passed.
pub fn lines_added<'r>(
    task: &str,
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(usize, &'r ProbeRun)> {
    let lines = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).count();
    called_wrong(task, probes, before, now)
        .filter(|(value, b, _)| {
            b.code == Some(0) && lines(&b.output) == 1 && holds_value(&b.output, value)
        })
        .map(|(_, _, n)| (lines(&n.output), n))
        .filter(|(k, _)| *k > 1)
        .collect()
}

/// The observation of a DONE refused by [`lines_added`] (`value_lines_added`).
pub fn lines_refusal(grown: &[(usize, &ProbeRun)]) -> crate::act::Observation {
    crate::probe::each_refusal(
        grown,
        |(_, r)| *r,
        |(k, r)| {
            format!(
                "`{}` printed one line before your change and {k} now",
                r.command
            )
        },
        "DONE refused: the task calls one printed value wrong, but ",
        "the right value takes the wrong one's place and nothing more is printed: find the \
         code that computes it and change it, then DONE",
    )
}

/// The observation of a DONE refused because a command still prints the value the task
/// calls wrong (`wrong_value_left`).
pub fn wrong_refusal(left: &[(String, &ProbeRun)]) -> crate::act::Observation {
    value_refusal(
        left,
        "still prints",
        "DONE refused: the task says that value is wrong, and ",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::probe::symptom as probe;

    fn got(task: &str, command: &str) -> Option<(String, bool)> {
        expected(task, &probe(command)).map(|e| (e.value, e.whole))
    }

    #[test]
    fn what_a_command_prints_nothing_for_is_missing_from_its_output() {
        let task = "`python3 restock.py` orders nothing for the AA batteries, although only 3 are left and the minimum is 10. Every item below its minimum should get enough whole packs to reach it.";
        let probes = crate::probe::commands(
            task,
            &crate::testing::repo(&[("restock.py", "print(1)\n")]).1,
            None,
        );
        assert_eq!(probes.len(), 1);
        assert_eq!(missing(task, &probes[0]), ["AA batteries"]);
        let run = |out: &str| ProbeRun {
            command: "python3 restock.py".to_owned(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let before = [run(
            "C-230  USB-C cables  2 x 10 = 20 units\n1 items to order\n",
        )];
        let nothing = [run("nothing to order\n")];
        let left = still_missing(task, &probes, &before, &nothing);
        assert_eq!(left.len(), 1);
        let fixed = [run("B-101  AA batteries  1 x 12 = 12 units\n")];
        assert!(still_missing(task, &probes, &before, &fixed).is_empty());
        assert_eq!(
            nothing_for("it prints nothing for a.txt").as_deref(),
            Some("a.txt")
        );
        assert_eq!(
            nothing_for("it prints nothing for a.txt.").as_deref(),
            Some("a.txt")
        );
        assert_eq!(
            nothing_for("says nothing for the first user when it starts"),
            Some("first user".to_owned())
        );
        assert_eq!(nothing_for("prints nothing at all"), None);
    }

    #[test]
    fn a_value_called_wrong_is_replaced_not_joined_by_more_lines() {
        let task = "`sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is newer.";
        let probes = [probe("sh latest.sh")];
        let run = |out: &str| ProbeRun {
            command: "sh latest.sh".to_owned(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let before = [run("latest release: v1.9.2\n")];
        let stray = [run("latest release: v1.10.0\n1.8.0\n1.9.0\n")];
        let got = lines_added(task, &probes, &before, &stray);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 3);
        assert!(
            lines_refusal(&got)
                .summary
                .contains("one line before your change and 3 now")
        );
        // The right value alone, or a trailing blank line: no refusal.
        for fine in ["latest release: v1.10.0\n", "latest release: v1.10.0\n\n"] {
            assert!(lines_added(task, &probes, &before, &[run(fine)]).is_empty());
        }
        // Several lines before, or no value called wrong: not judged.
        let before_many = [run("v1.9.2\nv1.8.0\n")];
        assert!(lines_added(task, &probes, &before_many, &stray).is_empty());
        let other = "`sh latest.sh` should print the newest release.";
        assert!(lines_added(other, &probes, &before, &stray).is_empty());
    }

    #[test]
    fn values_are_read_after_print_words() {
        let task = "Add a -c option to todo.sh: `sh todo.sh -c notes.txt` should print only the number of TODO lines (2 for notes.txt). Without -c it must keep working as now.";
        assert_eq!(
            got(task, "sh todo.sh -c notes.txt"),
            Some(("2".into(), true))
        );
        assert_eq!(
            got(
                "`python3 count.py a.txt` should print 3 but prints 4.",
                "python3 count.py a.txt"
            ),
            Some(("3".into(), false))
        );
        assert_eq!(
            got(
                "Make `python3 hi.py` print \"Hello, Ann\" again.",
                "python3 hi.py"
            ),
            Some(("Hello, Ann".into(), false))
        );
        assert_eq!(
            got(
                "`python3 avg.py` should print exactly `2.5`.",
                "python3 avg.py"
            ),
            Some(("2.5".into(), true))
        );
        // Not a value: negated, a bracket about another file, nothing after the command,
        // a number that is not what it prints.
        for (task, cmd) in [
            ("`python3 count.py` should not print 3.", "python3 count.py"),
            (
                "`sh todo.sh -c notes.txt` should print the count (2 for other.txt).",
                "sh todo.sh -c notes.txt",
            ),
            (
                "It should print 3 when you run `python3 count.py`.",
                "python3 count.py",
            ),
            (
                "`python3 count.py` prints the wrong count for 3 files.",
                "python3 count.py",
            ),
            (
                "`python3 count.py` prints nothing instead of 3.",
                "python3 count.py",
            ),
        ] {
            assert_eq!(got(task, cmd), None, "{task}");
        }
    }

    #[test]
    fn output_shows_a_value_whole_or_standing_alone() {
        let e = |value: &str, whole| Expected {
            command: "c".into(),
            value: value.into(),
            whole,
        };
        assert!(shows("      2\n", &e("2", true)));
        assert!(!shows("2 notes.txt\n", &e("2", true)));
        assert!(!shows("1\n", &e("2", true)));
        assert!(shows("count: 2 lines\n", &e("2", false)));
        assert!(shows("total 2.\n", &e("2", false)));
        assert!(!shows("count: 12\n", &e("2", false)));
        assert!(!shows("count: 2.5\n", &e("2", false)));
        assert!(shows("Hello, Ann!\n", &e("Hello, Ann", false)));
    }

    /// notice-wrap: the quoted texts the task says never appear must appear once done; a
    /// text printed before the session, or a sentence that says nothing is missing, is not
    /// this.
    #[test]
    fn texts_the_task_says_are_left_out_must_be_printed() {
        let task = "`python3 notice.py` drops text: \"without a fine.\" and the closing \"Thank you.\" never appear in the box. All of notice.txt should be shown.";
        let p = probe("python3 notice.py");
        assert_eq!(missing(task, &p), ["without a fine.", "Thank you."]);
        let run = |out: &str| ProbeRun {
            command: p.command.clone(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let before = [run("| The library will be closed |\n")];
        let still = [run("| The library will be closed |\n| Thank you. |\n")];
        let found = still_missing(task, std::slice::from_ref(&p), &before, &still);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "without a fine.");
        assert!(
            missing_refusal(&found)
                .summary
                .contains("leaves out \"without a fine.\"")
        );
        let done = [run("| without a fine. |\n| Thank you. |\n")];
        assert!(still_missing(task, std::slice::from_ref(&p), &before, &done).is_empty());
        // Printed before already: not what the task means by missing.
        assert!(still_missing(task, std::slice::from_ref(&p), &done, &before).is_empty());
        let plain = "`python3 notice.py` prints \"Thank you.\" twice.";
        assert!(missing(plain, &p).is_empty());
    }

    /// latest-release-sh and timer-durations: the value the task calls wrong must be gone.
    #[test]
    fn the_value_the_task_calls_wrong_must_go() {
        let latest = probe("sh latest.sh");
        let task = "`sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is newer.";
        assert_eq!(wrong_value(task, &latest).as_deref(), Some("v1.9.2"));
        let timer = probe("python3 timer.py 1h30m tea");
        let t = "`python3 timer.py 1h30m tea` sets the timer for 1800 s (0:30:00) instead of an hour and a half.";
        assert_eq!(wrong_value(t, &timer).as_deref(), Some("0:30:00"));
        let list = probe("python3 show.py");
        let l = "`python3 show.py` gives [1, 2, 4, 8, 16] instead of [1, 2, 4, 5, 5].";
        assert_eq!(wrong_value(l, &list).as_deref(), Some("[1, 2, 4, 8, 16]"));
        // No number, a path: archive-dir-sh.
        let archive = probe("sh archive.sh photos/");
        let a = "`sh archive.sh photos/` (with the slash that tab completion adds) writes backups/.tar instead of backups/photos.tar.";
        assert_eq!(wrong_value(a, &archive).as_deref(), Some("backups/.tar"));
        // No complaint, or no value: nothing.
        assert_eq!(wrong_value("`sh latest.sh` says v1.9.2.", &latest), None);
        assert_eq!(
            wrong_value("`sh latest.sh` says nothing, but should.", &latest),
            None
        );
        assert_eq!(
            wrong_value(
                "`sh latest.sh` says the wrong thing, but should not.",
                &latest
            ),
            None
        );

        let run = |out: &str| ProbeRun {
            command: latest.command.clone(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let before = [run("latest release: v1.9.2\n")];
        let still = [run("latest release: vv1.9.2\n")];
        let left = still_wrong(task, std::slice::from_ref(&latest), &before, &still);
        assert_eq!(left.len(), 1);
        assert!(
            wrong_refusal(&left)
                .summary
                .contains("`sh latest.sh` still prints v1.9.2")
        );
        let fixed = [run("latest release: v1.10.0\n")];
        assert!(still_wrong(task, std::slice::from_ref(&latest), &before, &fixed).is_empty());
        // A longer number is not the value: v1.9.25.
        assert!(!holds_value("v1.9.25", "v1.9.2") && !holds_value("v1.9.2.1", "v1.9.2"));
        assert!(holds_value("x v1.9.2.", "v1.9.2"));
    }

    /// The 1.5B on latest-release-sh (session 24): `latest release: v`, the wrong value gone
    /// and no right one, taken as done. The right value the task gives must be printed.
    #[test]
    fn the_right_value_the_task_gives_must_be_printed() {
        let latest = probe("sh latest.sh");
        let task = "`sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is newer.";
        let right = |t: &str, c: &str| crate::probe::value_called_right(t, c);
        assert_eq!(right(task, "sh latest.sh").as_deref(), Some("v1.10.0"));
        let a = "`sh archive.sh photos/` (with the slash that tab completion adds) writes backups/.tar instead of backups/photos.tar.";
        assert_eq!(
            right(a, "sh archive.sh photos/").as_deref(),
            Some("backups/photos.tar")
        );
        // What follows `but` is the wrong behaviour, or words: no right value.
        let orders = "`python3 report.py` should list the orders newest first, but it puts 2024-03-09 and 2024-03-03 above 2024-03-21.";
        assert_eq!(right(orders, "python3 report.py"), None);
        let timer = "`python3 timer.py 1h30m tea` sets the timer for 1800 s (0:30:00) instead of an hour and a half.";
        assert_eq!(right(timer, "python3 timer.py 1h30m tea"), None);
        assert_eq!(right("`sh latest.sh` says v1.9.2.", "sh latest.sh"), None);

        let run = |out: &str| ProbeRun {
            command: latest.command.clone(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let probes = std::slice::from_ref(&latest);
        let before = [run("latest release: v1.9.2\n")];
        let emptied = [run("latest release: v\n")];
        let missing = right_missing(task, probes, &before, &emptied);
        assert_eq!(missing.len(), 1);
        assert!(
            right_refusal(&missing)
                .summary
                .contains("`sh latest.sh` does not print v1.10.0"),
            "{:?}",
            right_refusal(&missing)
        );
        let fixed = [run("latest release: v1.10.0\n")];
        assert!(right_missing(task, probes, &before, &fixed).is_empty());
        // A value printed before the session is not this rule's (it was never missing).
        let both = [run("v1.9.2 v1.10.0\n")];
        assert!(right_missing(task, probes, &both, &emptied).is_empty());
    }
}
