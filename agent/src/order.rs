//! An order the task says a command's output has wrong, checked at DONE: `` `python3
//! report.py` should list the orders newest first, but it puts 2024-03-09 and 2024-03-03
//! above 2024-03-21`` relates 2024-03-09 and 2024-03-03 to 2024-03-21. Whatever order the
//! command printed them in before the session, the task calls wrong; once done it must print
//! them the other way round.
//!
//! The values are read off the task's words, never guessed: words with a digit, or quoted,
//! joined by `and` or commas, before `above`, `before` or `ahead of` and one after it, in the
//! sentence that writes the command or the next, which also says something is wrong (`but`,
//! `instead`, `wrong`, `should`). A pair counts only when the run before printed both on
//! lines of their own. Like the rest of [`crate::asks`], the rule only refuses a DONE.

use crate::probe::{Probe, ProbeRun, word_spans};

/// Words that put what comes before them above what comes after.
const ORDER_WORDS: &[&str] = &["above", "before", "ahead"];

/// Words that make a sentence about an order a complaint about it.
const WRONG_WORDS: &[&str] = &["but", "instead", "wrong", "should", "although", "yet"];

/// Words that join the values before an order word.
const JOINS: &[&str] = &["and", "or", "&"];

/// A word that is a value: it holds a digit, or was quoted.
fn value(word: &str) -> Option<String> {
    let quoted = word.starts_with(['"', '`', '\'']);
    let w = word.trim_matches(|c: char| {
        matches!(
            c,
            '"' | '`' | '\'' | ',' | '.' | ';' | ':' | '(' | ')' | '!' | '?'
        )
    });
    (!w.is_empty() && (quoted || w.chars().any(|c| c.is_ascii_digit()))).then(|| w.to_owned())
}

/// The (upper, lower) pairs the task relates for `probe`'s command (see the module).
pub fn pairs(task: &str, probe: &Probe) -> Vec<(String, String)> {
    let Some(text) = crate::probe::symptom_sentences(task, probe) else {
        return Vec::new();
    };
    let words: Vec<&str> = word_spans(text).into_iter().map(|(_, w)| w).collect();
    let plain = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '&')
            .to_lowercase()
    };
    if !words
        .iter()
        .any(|w| WRONG_WORDS.contains(&plain(w).as_str()))
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !ORDER_WORDS.contains(&plain(w).as_str()) {
            continue;
        }
        let mut j = i + 1;
        if plain(w) == "ahead" && words.get(j).is_some_and(|n| plain(n) == "of") {
            j += 1;
        }
        let Some(lower) = words.get(j).and_then(|n| value(n)) else {
            continue;
        };
        let mut upper = Vec::new();
        for prev in words[..i].iter().rev() {
            if JOINS.contains(&plain(prev).as_str()) {
                continue;
            }
            match value(prev) {
                Some(v) => upper.push(v),
                None => break,
            }
        }
        for u in upper.into_iter().rev() {
            if u != lower {
                out.push((u, lower.clone()));
            }
        }
    }
    out
}

/// The index of the first line of `output` that holds `value`.
fn line_of(output: &str, value: &str) -> Option<usize> {
    output.lines().position(|l| l.contains(value))
}

/// Each pair ([`pairs`]) a command printed in some order before the session and still prints
/// in that order: (first as printed, second as printed, the run now).
pub fn still_misordered<'r>(
    task: &str,
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(String, String, &'r ProbeRun)> {
    let mut out = Vec::new();
    for p in probes {
        let (Some(b), Some(n)) = (
            before.iter().find(|r| r.command == p.command),
            now.iter().find(|r| r.command == p.command),
        ) else {
            continue;
        };
        for (upper, lower) in pairs(task, p) {
            let (Some(bu), Some(bl)) = (line_of(&b.output, &upper), line_of(&b.output, &lower))
            else {
                continue;
            };
            if bu == bl {
                continue;
            }
            let (Some(nu), Some(nl)) = (line_of(&n.output, &upper), line_of(&n.output, &lower))
            else {
                continue;
            };
            if nu != nl && (nu < nl) == (bu < bl) {
                let (first, second) = if nu < nl {
                    (upper, lower)
                } else {
                    (lower, upper)
                };
                out.push((first, second, n));
            }
        }
    }
    out
}

/// The observation of a DONE refused because a command still prints values in the order the
/// task calls wrong (`order_unchanged`).
pub fn refusal(left: &[(String, String, &ProbeRun)]) -> crate::act::Observation {
    crate::probe::each_refusal(
        left,
        |(_, _, r)| *r,
        |(a, b, r)| format!("`{}` still prints {a} before {b}", r.command),
        "DONE refused: the task says that order is wrong, and ",
        "find the code that orders these lines (a sort, its key, or what the key is made from) \
         and change it until the order is the one the task asks for, then DONE",
    )
}

/// The first ISO date (`2024-03-09`) of `line`.
fn iso_date(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(9)).find_map(|i| {
        let d = &b[i..i + 10];
        let shape = d.iter().enumerate().all(|(k, c)| match k {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
        let alone = (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + 10).is_none_or(|c| !c.is_ascii_alphanumeric());
        (shape && alone).then(|| &line[i..i + 10])
    })
}

/// Whether `task` asks for a listing by date, newest first (`Some(true)`: `newest first`,
/// `latest first`, `most recent first`) or oldest first (`Some(false)`).
fn date_order(task: &str) -> Option<bool> {
    let t = task.to_lowercase();
    if ["newest first", "latest first", "most recent first"]
        .iter()
        .any(|p| t.contains(p))
    {
        Some(true)
    } else if ["oldest first", "earliest first"]
        .iter()
        .any(|p| t.contains(p))
    {
        Some(false)
    } else {
        None
    }
}

/// The task's own commands whose output, where the task asks for a listing newest (or
/// oldest) first, holds dates out of that order: each with the first two lines out of order
/// and the run. The 1.5B on orders-newest-first reversed the sort of orders.py; 2024-03-21
/// then came above 2024-03-09 as the task said, and 2024-02-28 at the top: the DONE was taken.
pub fn unsorted_dates<'r>(
    task: &str,
    probes: &[Probe],
    now: &'r [ProbeRun],
) -> Vec<(String, String, &'r ProbeRun)> {
    let Some(newest) = date_order(task) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in probes
        .iter()
        .filter(|p| p.symptom && !p.found && !p.keep && !p.plain && !p.sibling)
    {
        let Some(n) = now.iter().find(|r| r.command == p.command) else {
            continue;
        };
        let dates: Vec<&str> = n.output.lines().filter_map(iso_date).collect();
        if let Some(w) = dates
            .windows(2)
            .find(|w| if newest { w[0] < w[1] } else { w[0] > w[1] })
        {
            out.push((w[0].to_owned(), w[1].to_owned(), n));
        }
    }
    out
}

/// The observation of a DONE refused by [`unsorted_dates`] (`order_unsorted`).
pub fn unsorted_refusal(
    left: &[(String, String, &ProbeRun)],
    task: &str,
) -> crate::act::Observation {
    let which = if date_order(task) == Some(false) {
        "oldest first"
    } else {
        "newest first"
    };
    crate::probe::each_refusal(
        left,
        |(_, _, r)| *r,
        |(a, b, r)| format!("`{}` prints {a} above {b}", r.command),
        &format!("DONE refused: the task asks for {which}, and "),
        "every line must come in that order, not only the ones the task names: find what the \
         lines are sorted by (the key, and what it is made from) and fix that, then DONE",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::probe::symptom as probe;

    #[test]
    fn dates_out_of_the_order_the_task_asks_for_are_found() {
        assert_eq!(iso_date("  2024-03-09  #1043  Ines"), Some("2024-03-09"));
        assert_eq!(iso_date("id 12024-03-09"), None);
        let p = probe("python3 report.py");
        let task = "`python3 report.py` should list the orders newest first, but it puts 2024-03-09 above 2024-03-21.";
        let run = |out: &str| ProbeRun {
            command: p.command.clone(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let half = [run("2024-02-28 a\n2024-03-21 b\n2024-03-09 c\nitems: 3\n")];
        let found = unsorted_dates(task, std::slice::from_ref(&p), &half);
        assert_eq!(
            (found[0].0.as_str(), found[0].1.as_str()),
            ("2024-02-28", "2024-03-21")
        );
        assert!(
            unsorted_refusal(&found, task)
                .summary
                .contains("the task asks for newest first, and `python3 report.py` prints 2024-02-28 above 2024-03-21")
        );
        let right = [run("2024-03-21 b\n2024-03-09 c\n2024-02-28 a\n")];
        assert!(unsorted_dates(task, std::slice::from_ref(&p), &right).is_empty());
        let oldest = "`python3 report.py` should list the orders oldest first.";
        assert_eq!(
            unsorted_dates(oldest, std::slice::from_ref(&p), &right).len(),
            1
        );
        assert!(
            unsorted_dates(
                "`python3 report.py` is wrong.",
                std::slice::from_ref(&p),
                &half
            )
            .is_empty()
        );
    }

    fn run(output: &str) -> ProbeRun {
        ProbeRun {
            command: "python3 report.py".to_owned(),
            code: Some(0),
            timed_out: false,
            output: output.to_owned(),
        }
    }

    const TASK: &str = "`python3 report.py` should list the orders newest first, but it puts \
                        2024-03-09 and 2024-03-03 above 2024-03-21.";

    #[test]
    fn the_values_an_order_word_relates_are_read() {
        let p = probe("python3 report.py");
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            pairs(TASK, &p),
            [
                pair("2024-03-09", "2024-03-21"),
                pair("2024-03-03", "2024-03-21")
            ]
        );
        // No complaint, or no values: nothing.
        assert!(pairs("`python3 report.py` puts 3 above 4.", &p).is_empty());
        assert!(
            pairs(
                "`python3 report.py` should put the totals above the list.",
                &p
            )
            .is_empty()
        );
    }

    #[test]
    fn an_order_printed_as_before_is_refused_and_the_reverse_taken() {
        let p = probe("python3 report.py");
        let before = [run("  2024-03-09 #1\n  2024-03-03 #2\n  2024-03-21 #3\n")];
        // A change that moved something else: the order the task calls wrong stays.
        let same = [run(
            "orders:\n  2024-03-09 #1\n  2024-03-21 #3\n  2024-03-03 #2\n",
        )];
        let left = still_misordered(TASK, std::slice::from_ref(&p), &before, &same);
        assert_eq!(left.len(), 1);
        assert_eq!(
            (left[0].0.as_str(), left[0].1.as_str()),
            ("2024-03-09", "2024-03-21")
        );
        assert!(
            refusal(&left)
                .summary
                .contains("still prints 2024-03-09 before 2024-03-21")
        );
        let fixed = [run("  2024-03-21 #3\n  2024-03-09 #1\n  2024-03-03 #2\n")];
        assert!(still_misordered(TASK, std::slice::from_ref(&p), &before, &fixed).is_empty());
        // A value no longer printed is not judged here.
        let gone = [run("  2024-03-09 #1\n")];
        assert!(still_misordered(TASK, std::slice::from_ref(&p), &before, &gone).is_empty());
    }
}
