//! The `whole` protocol: files shown as they are, a file changed by writing it whole after
//! its path, verb lines for the rest — through the same loop, journal, checks and resume as
//! the text protocol, with its own failures (a block that leaves code out, a block the token
//! limit cut) refused and told, never written.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{Config, Event, Protocol, StopReason};
use common::{engine, events, prompts, refusals, repo, resume, session};

const STATS: &str = "def mean(xs):\n    total = 0\n    for i in range(1, len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";
const FIXED: &str = "def mean(xs):\n    total = 0\n    for i in range(0, len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";

fn cfg(task: &str) -> Config {
    let mut c = common::whole_cfg(task);
    c.max_turns = 6;
    c
}

/// The check that passes once stats.py's loop starts at 0.
fn fixed_check() -> Vec<String> {
    ["grep", "-q", "range(0,", "stats.py"]
        .map(String::from)
        .to_vec()
}

fn malformed(dir: &std::path::Path, session: &str) -> Vec<String> {
    events(dir, session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Malformed { kind, .. } => Some(kind),
            _ => None,
        })
        .collect()
}

/// The model sees the files as they are, writes the fixed file whole, and its DONE is
/// checked by `--verify`.
#[test]
fn a_file_written_whole_is_applied_and_done_is_verified() {
    let dir = repo("whole-fix", &[("stats.py", STATS), ("notes.txt", "n\n")]);
    let reply = format!("The loop skips the first item.\n\nstats.py\n```python\n{FIXED}```\n");
    let e = engine(&[reply.as_str(), "DONE fixed the loop"]);
    let mut c = cfg("mean in stats.py skips the first element");
    c.verify = Some(fixed_check());
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
    let first = &prompts(&e)[0];
    // Unnumbered, fenced, every file; the system prompt asks for whole files.
    assert!(
        first.contains(&format!("stats.py\n```\n{STATS}```\n")),
        "{first}"
    );
    assert!(first.contains("notes.txt\n```\nn\n```"), "{first}");
    assert!(!first.contains("  1| def mean"));
    assert!(first.contains("complete new content"));
    // One message by default: no acknowledgement turn.
    assert!(!first.contains("<assistant>"), "{first}");
    // Journaled with its protocol, so a resume speaks it too.
    let start = events(dir.path(), &out.session).into_iter().next().unwrap();
    assert!(matches!(start, Event::Start { protocol: Some(p), .. } if p == "whole"));
}

/// A block standing in `# ... rest unchanged` for code is refused: the file keeps every line,
/// the model is told why, and the next, complete block goes through.
#[test]
fn a_block_that_leaves_code_out_is_not_written_and_the_model_is_told() {
    let dir = repo("whole-elided", &[("stats.py", STATS)]);
    let elided = "stats.py\n```python\ndef mean(xs):\n    total = 0\n    # ... rest of the code unchanged\n```\n";
    let full = format!("stats.py\n```python\n{FIXED}```\n");
    let e = engine(&[elided, full.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("fix mean in stats.py"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
    assert_eq!(malformed(dir.path(), &out.session), vec!["elided_file"]);
    let second = &prompts(&e)[1];
    assert!(
        second.contains("a file block was not written (elided_file)"),
        "{second}"
    );
    assert!(second.contains("without placeholders"));
}

/// A placeholder-looking line that the file itself has is content, not an elision.
#[test]
fn a_line_the_file_already_has_is_not_an_elision() {
    let original = "def f():\n    ...\n";
    let dir = repo("whole-ellipsis", &[("f.py", original)]);
    let e = engine(&[
        "f.py\n```\ndef f():\n    ...\n\n\ndef g():\n    ...\n```\n",
        "DONE",
    ]);
    let out = session(&e, dir.path(), &cfg("add a stub g to f.py"));
    assert_eq!(out.reason, StopReason::Done);
    assert!(malformed(dir.path(), &out.session).is_empty());
    assert!(
        std::fs::read_to_string(dir.path().join("f.py"))
            .unwrap()
            .contains("def g():")
    );
}

/// A reply cut by its token limit inside a block writes nothing of it.
#[test]
fn a_block_cut_by_the_token_limit_writes_nothing() {
    let dir = repo("whole-cut", &[("stats.py", STATS)]);
    let long = format!("stats.py\n```python\n{}", FIXED.repeat(20));
    let e = engine(&[long.as_str()]);
    let mut c = cfg("fix mean");
    c.reply_reserve = 60;
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        STATS
    );
    assert_eq!(malformed(dir.path(), &out.session), vec!["truncated_file"]);
}

/// Commands around the blocks act in the reply's order: a new file, a nested-fence README,
/// then RUN — and a verb-looking line inside a file block is content, never a command.
#[test]
fn blocks_and_verb_lines_act_in_order_and_block_lines_are_never_commands() {
    let dir = repo("whole-order", &[("README.md", "# Tool\n")]);
    let reply = "README.md\n```markdown\n# Tool\n\nUsage:\n\n```sh\ntool -v\n```\n```\nrun.sh\n```sh\nDELETE README.md\n```\nRUN cat run.sh\n";
    let e = engine(&[reply, "DONE"]);
    let out = session(&e, dir.path(), &cfg("document usage"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
        "# Tool\n\nUsage:\n\n```sh\ntool -v\n```\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("run.sh")).unwrap(),
        "DELETE README.md\n"
    );
    let names: Vec<String> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Proposal { action, .. } => Some(action["name"].as_str().unwrap().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["create", "create", "run", "done"]);
    // RUN saw the file the same reply wrote.
    assert!(prompts(&e)[1].contains("DELETE README.md"));
}

/// READ of a whole file shows it as it is, fenced; a range stays numbered.
#[test]
fn read_shows_the_file_as_it_is() {
    let dir = repo("whole-read", &[("a.py", "x = 1\ny = 2\n")]);
    let e = engine(&["READ a.py", "READ a.py:2-2"]);
    let mut c = cfg("look");
    c.max_turns = 3;
    session(&e, dir.path(), &c);
    let p = prompts(&e);
    assert!(p[1].contains("a.py\n```\nx = 1\ny = 2\n```"), "{}", p[1]);
    assert!(p[2].contains("2| y = 2"), "{}", p[2]);
}

/// DONE on an unchanged tree is refused with the whole protocol's words.
#[test]
fn done_without_a_change_is_refused_in_this_protocols_words() {
    let dir = repo("whole-nochange", &[("a.py", "x = 1\n")]);
    let e = engine(&["DONE"]);
    let mut c = cfg("set x to 2");
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.no_change, 1);
    assert!(prompts(&e).len() == 1);
    let obs = events(dir.path(), &out.session)
        .into_iter()
        .find_map(|e| match e {
            Event::Observation { hint, .. } => hint,
            _ => None,
        })
        .unwrap();
    assert!(
        obs.contains("complete new content in a fenced code block"),
        "{obs}"
    );
}

/// A resumed session speaks the protocol its journal names, whatever the new run asks for.
#[test]
fn a_resumed_session_keeps_its_protocol() {
    let dir = repo("whole-resume", &[("stats.py", STATS)]);
    let e = engine(&["READ stats.py"]);
    let mut c = cfg("fix mean");
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    let full = format!("stats.py\n```\n{FIXED}```\n");
    let e2 = engine(&[full.as_str(), "DONE"]);
    let mut text = c.clone();
    text.protocol = Protocol::Text;
    text.max_turns = 4;
    let out = resume(&e2, dir.path(), &text, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
    assert!(prompts(&e2)[0].contains("complete new content"));
}

/// The system prompt's example file copied back is refused as an echo and written nowhere;
/// a block that is the file as it is, is told so, not failed.
#[test]
fn the_example_copied_back_is_an_echo_and_an_unchanged_block_is_no_failure() {
    let dir = repo(
        "whole-echo",
        &[("stats.py", STATS), ("test_stats.py", "import stats\n")],
    );
    let example = "colors.py\n```python\ndef hex_color(r, g, b):\n    return f\"#{r:02x}{g:02x}{b:02x}\"\n```\n";
    let reply = format!(
        "{example}\ntest_stats.py\n```\nimport stats\n```\nstats.py\n```\n{FIXED}```\nDONE"
    );
    let e = engine(&[reply.as_str()]);
    let out = session(&e, dir.path(), &cfg("fix mean"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.echoes, 1);
    assert!(!dir.path().join("colors.py").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
    let summaries: Vec<(bool, String)> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Observation { ok, summary, .. } => Some((ok, summary)),
            _ => None,
        })
        .collect();
    assert!(summaries.contains(&(
        false,
        "test_stats.py not changed: your block is the file exactly as it is".to_owned()
    )));
    assert!(agent::whole::system_prompt(agent::ApprovalMode::Auto).contains(example.trim_end()));
}

/// With a check, every turn that changed the repository runs it and is told the result:
/// failing, its output (no false success); passing, that it passes — and only the model's DONE
/// ends the session, since a check may cover part of the task.
#[test]
fn the_check_runs_after_each_change_and_its_result_is_fed_back() {
    let dir = repo("whole-autocheck", &[("stats.py", STATS)]);
    let wrong = "stats.py\n```\ndef mean(xs):\n    return 0\n```\n";
    let right = format!("stats.py\n```\n{FIXED}```\n");
    let e = engine(&[wrong, right.as_str(), "DONE"]);
    let mut c = cfg("fix mean");
    c.verify = Some(fixed_check());
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(out.turns, 3);
    assert_eq!(out.false_successes, 0);
    let p = prompts(&e);
    assert!(
        p[1].contains("the check `grep -q 'range(0,' stats.py` fails after your change"),
        "{}",
        p[1]
    );
    assert!(
        p[2].contains("the check `grep -q 'range(0,' stats.py` passes now"),
        "{}",
        p[2]
    );
    assert!(p[2].contains("if the task is finished, reply DONE"));
    let checks: Vec<(bool, bool)> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Verify {
                ok, after_change, ..
            } => Some((ok, after_change)),
            _ => None,
        })
        .collect();
    assert_eq!(checks, [(false, true), (true, true), (true, false)]);
}

/// The 1.5B on backoff-cap: the right fix written, its check passing, then `**DONE**` (prose)
/// and other replies until the turns ran out — the fix lost with the attempt. A session that
/// runs out with its change in place and its check passing is judged as a DONE would be and
/// stops `verified`; one whose check fails now stops as it ran out, with no false success;
/// one whose DONE a gate refuses (a whitespace-only change) too.
#[test]
fn a_session_that_runs_out_with_its_check_passing_is_judged_as_done() {
    let dir = repo("whole-ran-out", &[("stats.py", STATS)]);
    let right = format!("stats.py\n```\n{FIXED}```\n");
    let e = engine(&[right.as_str(), "**DONE**", "**DONE**"]);
    let mut c = cfg("fix mean");
    c.max_turns = 3;
    c.verify = Some(fixed_check());
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(out.false_successes, 0);
    let checks: Vec<(bool, bool)> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Verify {
                ok, after_change, ..
            } => Some((ok, after_change)),
            _ => None,
        })
        .collect();
    assert_eq!(checks, [(true, true), (true, false)]);

    // The check fails on what the session left: it ran out, nothing claimed.
    let dir = repo("whole-ran-out-failing", &[("stats.py", STATS)]);
    let wrong = "stats.py\n```\ndef mean(xs):\n    return 0\n```\n";
    let e = engine(&[wrong, "**DONE**"]);
    let mut c = cfg("fix mean");
    c.max_turns = 2;
    c.verify = Some(fixed_check());
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::MaxTurns);
    assert_eq!(out.false_successes, 0);

    // The check passes but the change is only blanks: the DONE gate refuses, it ran out.
    let dir = repo("whole-ran-out-refused", &[("stats.py", STATS)]);
    let blanks = format!(
        "stats.py\n```\n{}```\n",
        STATS.replace("total = 0", "total = 0 ")
    );
    let e = engine(&[blanks.as_str(), "**DONE**"]);
    let mut c = cfg("fix mean");
    c.max_turns = 2;
    c.verify = Some(vec!["true".into()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::MaxTurns);
    assert_eq!(refusals(dir.path(), &out.session), ["whitespace_only"]);
}

/// A failed check after a change is not a false success after a resume either, and the
/// resumed history shows it as the live one did.
#[test]
fn a_failed_check_after_a_change_resumes_as_feedback() {
    let dir = repo("whole-autocheck-resume", &[("stats.py", STATS)]);
    let wrong = "stats.py\n```\ndef mean(xs):\n    return 0\n```\n";
    let e = engine(&[wrong]);
    let mut c = cfg("fix mean");
    c.max_turns = 1;
    c.verify = Some(vec!["false".into()]);
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.false_successes, 0);
    let e2 = engine(&["READ stats.py"]);
    let mut c2 = c.clone();
    c2.max_turns = 1;
    let out = resume(&e2, dir.path(), &c2, &first.session);
    assert_eq!(out.false_successes, 0);
    let live = &prompts(&e)[0];
    let resumed = &prompts(&e2)[0];
    assert!(resumed.starts_with(live.as_str()));
    assert!(resumed.contains("fails after your change"), "{resumed}");
}

/// A reply of several blocks that comes back unchanged turn after turn never repeats one
/// action twice in a row, but it is the same turn again: told so on the second, stopped as a
/// loop on the third (a greedy model sends it until the turns run out).
#[test]
fn a_turn_that_repeats_the_last_one_is_told_and_stopped_as_a_loop() {
    let dir = repo("whole-turn-loop", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let same = "a.txt\n```\na\n```\n\nb.txt\n```\nb\n```\n";
    let e = engine(&[same; 6]);
    let out = session(&e, dir.path(), &cfg("change a.txt and b.txt"));
    assert_eq!(out.reason, StopReason::Loop);
    assert_eq!(out.turns, 3);
    let p = prompts(&e);
    // The unchanged turns are notes at the prompt's end, not turns: the model's copies are
    // not there for it to copy again.
    assert!(
        !p[1].contains("This reply repeats an earlier one") && !p[1].contains("<assistant>"),
        "{}",
        p[1]
    );
    assert!(
        p[2].contains("This reply repeats an earlier one"),
        "{}",
        p[2]
    );

    // Two replies in turn (the file, then the test, then the file again) are no progress
    // either: the third time one of them comes back ends the session.
    let dir = repo("whole-turn-cycle", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let (a, b) = ("a.txt\n```\na\n```\n", "b.txt\n```\nb\n```\n");
    let e = engine(&[a, b, a, b, a, b]);
    let out = session(&e, dir.path(), &cfg("change a.txt and b.txt"));
    assert_eq!(out.reason, StopReason::Loop);
    assert_eq!(out.turns, 5);
}

/// A DONE that the check rejects again with the same failure is a loop like any action's:
/// told that DONE changes nothing, and stopped at the third — live and after a resume, which
/// counts the rejected DONEs from the journal.
#[test]
fn a_done_rejected_again_and_again_is_told_and_stopped_as_a_loop() {
    let dir = repo("whole-done-loop", &[("stats.py", STATS)]);
    let change = format!("stats.py\n```\n{FIXED}```\nDONE");
    let e = engine(&[change.as_str(), "DONE", "DONE", "DONE"]);
    let mut c = cfg("fix mean");
    c.verify = Some(vec!["false".into()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Loop);
    assert_eq!(out.turns, 3);
    assert_eq!(out.false_successes, 3);
    assert!(prompts(&e)[2].contains("DONE again changes nothing"));

    let dir = repo("whole-done-loop-resume", &[("stats.py", STATS)]);
    let e = engine(&[change.as_str(), "DONE"]);
    c.max_turns = 2;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    let e2 = engine(&["DONE", "DONE"]);
    let out = resume(&e2, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Loop);
    assert_eq!(out.turns, 3);
}

/// The same file block written again in one reply (a small model's loop) cuts the reply
/// there; the block is written once, and the model is told it repeated itself.
#[test]
fn a_block_written_again_in_one_reply_is_cut_and_written_once() {
    let dir = repo("whole-block-loop", &[("stats.py", STATS)]);
    let block = format!("stats.py\n```python\n{FIXED}```\n\n");
    let looped = block.repeat(5);
    let e = engine(&[looped.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("fix mean"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
    assert!(malformed(dir.path(), &out.session).contains(&"repetition".to_owned()));
    let observations = events(dir.path(), &out.session)
        .into_iter()
        .filter(|e| matches!(e, Event::Observation { .. }))
        .count();
    assert_eq!(
        observations, 1,
        "one write, no 'not changed' for the copies"
    );
}

/// A bare word above a block (a directory, not the file) writes nothing and is no guess at
/// a path: the model is told to name the file, and its next block goes through.
#[test]
fn a_block_headed_by_a_bare_word_is_told_to_name_its_file() {
    let dir = repo("whole-headless", &[("README.md", "# app\n")]);
    let e = engine(&[
        "docs\n```markdown\n# Docs\n```\n",
        "docs/index.md\n```markdown\n# Docs\n```\n",
        "DONE",
    ]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Create a directory docs containing a file index.md"),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(!dir.path().join("docs").is_file());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("docs/index.md")).unwrap(),
        "# Docs\n"
    );
    let p = prompts(&e);
    assert!(p[1].contains("(block_without_path)"), "{}", p[1]);
    assert!(p[1].contains("dir/name.txt"), "{}", p[1]);
    // A shell snippet in prose ends in a bare word above its closing fence: not a header.
    let reply = "Run this:\n```sh\nif true; then\n  echo hi\nfi\n```\n";
    let e = engine(&[reply, "DONE"]);
    let dir = repo("whole-headless-prose", &[("README.md", "# app\n")]);
    let out = session(&e, dir.path(), &cfg("look"));
    assert!(!malformed(dir.path(), &out.session).contains(&"block_without_path".to_owned()));
}

/// A block after a sentence, with no path line above it, writes nothing and is no guess at
/// a path: the model is told where the path goes (not only that nothing was found), and its
/// next block goes through. Beside a written file, a fenced snippet is not told.
#[test]
fn a_block_without_a_path_line_is_told_where_the_path_goes() {
    let dir = repo(
        "whole-unnamed",
        &[("calc.py", "def add(a, b):\n    return a - b\n")],
    );
    let e = engine(&[
        // Its definitions are not calc.py's (one more): no place is certain.
        "Here is the updated content of calc.py:\n\n```python\ndef add(a, b):\n    return a + b\n\n\ndef twice(a):\n    return add(a, a)\n```\n",
        "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n",
        "DONE",
    ]);
    let out = session(&e, dir.path(), &cfg("Fix add in calc.py"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let p = prompts(&e);
    assert!(p[1].contains("(block_without_path_line)"), "{}", p[1]);
    assert!(p[1].contains("right above the opening fence"), "{}", p[1]);
    assert_eq!(
        malformed(dir.path(), &out.session),
        vec!["block_without_path_line".to_owned()]
    );
    // A file written and a snippet explained beside it: only the file counts.
    let dir = repo(
        "whole-unnamed-beside",
        &[("calc.py", "def add(a, b):\n    return a - b\n")],
    );
    let e = engine(&[
        "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\nUse it like this:\n```python\nadd(1, 2)\n```\n",
        "DONE",
    ]);
    let out = session(&e, dir.path(), &cfg("Fix add in calc.py"));
    assert_eq!(out.reason, StopReason::Done);
    assert!(malformed(dir.path(), &out.session).is_empty());
}

/// The 1.5B on backoff-cap, another attempt: "The new `delays` function should look like
/// this:" and only the function in a fence. Its definitions are one file's own and no other's,
/// so it is spliced into that file (both repairs named, the model told to put the path line
/// next time); a block whose function two files define is told as before, nothing written.
#[test]
fn a_block_without_a_path_line_whose_functions_are_one_files_goes_there() {
    const CALC: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
    let dir = repo(
        "whole-placed",
        &[
            ("calc.py", CALC),
            ("main.py", "from calc import add\nprint(add(1, 2))\n"),
        ],
    );
    let reply = "The add function should look like this:\n\n```python\ndef add(a, b):\n    return a + b\n```\n";
    // The same block again after the change: nothing to write, and told so.
    let e = engine(&[reply, reply, "DONE"]);
    let out = session(&e, dir.path(), &cfg("Fix add in calc.py"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        CALC.replacen("return a - b", "return a + b", 1)
    );
    assert_eq!(
        malformed(dir.path(), &out.session),
        ["block_as_file_has_it"]
    );
    assert!(
        prompts(&e)[2].contains("holds code exactly as its file has it now"),
        "{}",
        prompts(&e)[2]
    );
    let repairs: Vec<Vec<String>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Proposal { repairs, .. } if !repairs.is_empty() => Some(repairs),
            _ => None,
        })
        .collect();
    assert_eq!(
        repairs,
        [vec![
            "block_placed_by_definitions".to_owned(),
            "partial_file_merged".to_owned()
        ]]
    );
    assert!(
        prompts(&e)[1].contains("had no path line above it"),
        "{}",
        prompts(&e)[1]
    );

    // The whole file under prose, without its path line (the 1.5B on book-year-field): it
    // holds every definition of calc.py and no other file's, so it is calc.py written whole.
    let dir = repo(
        "whole-placed-whole",
        &[
            ("calc.py", CALC),
            ("main.py", "from calc import add\nprint(add(1, 2))\n"),
        ],
    );
    let fixed = CALC.replacen("return a - b", "return a + b", 1);
    let reply = format!("calc.py should look like this:\n\n```python\n{fixed}```\n");
    let e = engine(&[reply.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("Fix add in calc.py"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        fixed
    );
    let repairs: Vec<Vec<String>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Proposal { repairs, .. } if !repairs.is_empty() => Some(repairs),
            _ => None,
        })
        .collect();
    assert_eq!(repairs, [vec!["block_placed_by_definitions".to_owned()]]);

    // Two files define add: no place is certain.
    let dir = repo("whole-placed-two", &[("calc.py", CALC), ("calc2.py", CALC)]);
    let e = engine(&[reply]);
    let mut c = cfg("Fix add in calc.py");
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(
        malformed(dir.path(), &out.session),
        ["block_without_path_line"]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        CALC
    );
}

/// `files_apart`: the files, the assistant's acknowledgement, then the task as a message of
/// its own; a resume lays the first message out as the session did. Attempts alternate the
/// layouts.
#[test]
fn the_files_apart_layout_sends_the_task_as_a_message_of_its_own() {
    let dir = repo("whole-apart", &[("stats.py", STATS)]);
    let e = engine(&["READ stats.py"]);
    let mut c = cfg("mean in stats.py skips the first element");
    c.files_apart = true;
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    let ack = p.find("<assistant>Ok, I have the files.").unwrap();
    assert!(p.find("stats.py\n```\n").unwrap() < ack);
    assert!(
        p[ack..].contains(
            "<user>mean in stats.py skips the first element\nReply with only the files you change"
        ),
        "{p}"
    );
    assert!(!p.contains('\u{1e}'));
    // Resumed without the flag: the journal's first message keeps its layout.
    let e2 = engine(&["DONE"]);
    c.files_apart = false;
    resume(&e2, dir.path(), &c, &first.session);
    assert!(prompts(&e2)[0].starts_with(&p[..ack + 40]));
    assert!(!agent::attempts::layout(false, 1) && agent::attempts::layout(false, 2));
    assert!(agent::attempts::layout(true, 1) && !agent::attempts::layout(true, 4));
}

/// `focus`: the files the task names and what they import are shown whole, the module before
/// its test; a file that only uses the task's identifiers (sync.py) and one the task never
/// points at (settings.ini) are named, not shown. Attempts 3 and 4 focus; a task that points
/// at nothing shows every file.
#[test]
fn the_focused_layout_shows_only_the_files_the_task_points_at() {
    let files = [
        (
            "test_retry.py",
            "from retry import delays\nassert delays(3, 1, 2) == [1, 2, 2]\n",
        ),
        (
            "retry.py",
            "def delays(n, base, cap):\n    return [base * 2**i for i in range(n)]\n",
        ),
        (
            "sync.py",
            "from retry import delays\nprint(delays(2, 1, 5))\n",
        ),
        ("settings.ini", "[retry]\nmax_delay = 5\n"),
    ];
    let dir = repo("whole-focus", &files);
    let e = engine(&["DONE"]);
    let mut c = cfg("python3 test_retry.py fails: delays in retry.py never caps the wait.");
    c.focus = true;
    c.max_turns = 1;
    // With the task's command run, it is traced, and a focused attempt shows only the
    // functions it runs (`whole::functions_message`): here all of retry.py, not the test.
    if common::python_runs_confined() {
        session(&e, dir.path(), &c);
        let p = &prompts(&e)[0];
        assert!(
            p.contains("The files the task's command runs, as they are now:\n\nretry.py\n```\n"),
            "{p}"
        );
        assert!(!p.contains("test_retry.py\n```\n"), "{p}");
    }
    // Without it (no trace), the files the task points at.
    c.probes = false;
    let e = engine(&["DONE"]);
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    let at = |needle: &str| p.find(needle);
    assert!(
        at("retry.py\n```\n").unwrap() < at("test_retry.py\n```\n").unwrap(),
        "{p}"
    );
    assert!(
        at("sync.py\n```").is_none() && at("settings.ini\n```").is_none(),
        "{p}"
    );
    assert!(
        p.find("Not shown below (READ them if you need them): settings.ini, sync.py")
            .is_some_and(|i| i < at("retry.py\n```\n").unwrap()),
        "{p}"
    );

    // Not focused: every file whole, as the task names them first.
    let e = engine(&["DONE"]);
    c.focus = false;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(
        p.contains("settings.ini\n```") && p.contains("sync.py\n```"),
        "{p}"
    );
    assert!(p.find("test_retry.py\n```").unwrap() < p.find("\nretry.py\n```").unwrap());

    // A task that points at no file: focus changes nothing.
    let e = engine(&["DONE"]);
    c.focus = true;
    c.task = "Make the waits shorter.".to_owned();
    session(&e, dir.path(), &c);
    assert!(prompts(&e)[0].contains("settings.ini\n```"));

    let focused: Vec<u32> = (1..=8).filter(|&n| agent::attempts::focus(n)).collect();
    assert_eq!(focused, [3, 4, 7, 8]);
    // The second of each focused pair writes the origin's function anew; under --focus,
    // every even attempt.
    let anew: Vec<u32> = (1..=8)
        .filter(|&n| agent::attempts::anew(agent::attempts::focus(n), n))
        .collect();
    assert_eq!(anew, [4, 8]);
    let anew: Vec<u32> = (1..=8)
        .filter(|&n| agent::attempts::anew(true, n))
        .collect();
    assert_eq!(anew, [2, 4, 6, 8]);
}

/// A block headed by a directory (`docs/`) is refused before anything is written (it once
/// made `docs`, failed to write, and reported a rollback failure), and a file where a
/// directory is needed fails with everything as it was.
#[test]
fn a_directory_as_a_file_path_is_refused_and_nothing_changes() {
    let dir = repo("whole-dir-path", &[("notes.txt", "n\n")]);
    let e = engine(&[
        "docs/\n```markdown\n# Docs\n```\n",
        "notes.txt/index.md\n```\n# Docs\n```\n",
    ]);
    let mut c = cfg("Create a directory docs containing a file index.md");
    c.max_turns = 2;
    let out = session(&e, dir.path(), &c);
    let summaries: Vec<String> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Observation { summary, .. } => Some(summary),
            _ => None,
        })
        .collect();
    assert_eq!(
        summaries[0],
        "docs/ is a directory, not a file; nothing was written"
    );
    // A file where a directory is needed: refused when the change is planned.
    assert!(summaries[1].contains("Not a directory"), "{summaries:?}");
    assert!(!dir.path().join("docs").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "n\n"
    );
    assert!(prompts(&e)[1].contains("docs/notes.md"));
}

/// Without a check, a model that made its change often writes the file again instead of
/// DONE. A reply of nothing but unchanged files after the change is taken as its DONE (the
/// journal shows the implied DONE); an unchanged file beside another action is reminded that
/// DONE ends the task.
#[test]
fn files_written_back_unchanged_after_the_change_are_an_implied_done() {
    let dir = repo("whole-again", &[("stats.py", STATS), ("notes.txt", "n\n")]);
    let fixed = format!("stats.py\n```\n{FIXED}```\n");
    let e = engine(&[fixed.as_str(), fixed.as_str(), "READ notes.txt"]);
    let out = session(&e, dir.path(), &cfg("fix mean"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    let done = events(dir.path(), &out.session)
        .into_iter()
        .rev()
        .find_map(|e| match e {
            Event::Proposal { text, .. } => Some(text),
            _ => None,
        })
        .unwrap();
    assert!(done.starts_with("DONE implied"), "{done}");

    // Beside another action it is no answer: reminded, and the session goes on.
    let dir = repo(
        "whole-again-read",
        &[("stats.py", STATS), ("notes.txt", "n\n")],
    );
    let with_read = format!("{fixed}READ notes.txt\n");
    let e = engine(&[fixed.as_str(), with_read.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("fix mean"));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 3);
    let p = prompts(&e);
    assert!(p[2].contains("your earlier change is in place"), "{}", p[2]);
    assert!(!p[1].contains("your earlier change is in place"));

    // Before any change, files written back are no answer either.
    let dir = repo("whole-again-first", &[("stats.py", STATS)]);
    let same = format!("stats.py\n```\n{STATS}```\n");
    let e = engine(&[same.as_str(), fixed.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("fix mean"));
    assert_eq!(out.turns, 3);
}

/// A small model writes its change as a diff inside the file block. When the block's
/// unmarked and `-` lines are the file exactly, it is the change it shows (repair
/// `diff_markers_in_file`); written again after the change (its `+` side is the file), it is
/// the file written back, the implied DONE. A diff that lines up with neither is refused.
#[test]
fn a_diff_in_a_file_block_that_lines_up_with_the_file_is_its_change() {
    const CONFIG: &str = "NAME = 1\nMAX_RETRIES = 3\nTIMEOUT = 10\n";
    let diff = "config.py\n```\nNAME = 1\n-MAX_RETRIES = 3\n+MAX_RETRIES = 5\nTIMEOUT = 10\n```\n";
    let dir = repo("whole-diff", &[("config.py", CONFIG)]);
    let e = engine(&[diff, diff]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Change MAX_RETRIES from 3 to 5 in config.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.py")).unwrap(),
        "NAME = 1\nMAX_RETRIES = 5\nTIMEOUT = 10\n"
    );
    let repairs: Vec<Vec<String>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Proposal { repairs, .. } => Some(repairs),
            _ => None,
        })
        .collect();
    assert_eq!(repairs[0], ["diff_markers_in_file"]);

    // A line left out: neither side is the file, nothing is written.
    let dir = repo("whole-diff-partial", &[("config.py", CONFIG)]);
    let partial = "config.py\n```\n-MAX_RETRIES = 3\n+MAX_RETRIES = 5\n```\n";
    let e = engine(&[partial]);
    let mut c = cfg("Change MAX_RETRIES from 3 to 5 in config.py.");
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(malformed(dir.path(), &out.session), ["diff_in_file"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.py")).unwrap(),
        CONFIG
    );
}

/// The 1.5B, focused on retry.py and its test, wrote sync.py — which it was never shown —
/// whole from imagination, every time (backoff-cap). A file the model has not seen is not
/// written over: refused (`unseen_file`), left as it was, and shown as a READ would; written
/// again once seen, it is taken. A file it READ is no guess either.
#[test]
fn a_file_the_model_never_saw_is_shown_not_written_over() {
    const SYNC: &str = "from retry import delays\nprint(delays(2, 1, 5))\n";
    let files = [
        (
            "retry.py",
            "def delays(n, base, cap):\n    return [base * 2**i for i in range(n)]\n",
        ),
        (
            "test_retry.py",
            "from retry import delays\nassert delays(3, 1, 2) == [1, 2, 2]\n",
        ),
        ("sync.py", SYNC),
        ("README.md", "Retries with backoff.\n"),
    ];
    let dir = repo("whole-unseen", &files);
    let guess = "sync.py\n```python\nimport time\n\ndef sync():\n    time.sleep(2)\n```\n";
    let seen = "sync.py\n```python\nfrom retry import delays\nprint(delays(3, 1, 5))\n```\n";
    let last = "README.md\n```\nRetries with capped backoff.\n```\n\nretry.py\n```python\n\
                def delays(n, base, cap):\n    return [min(base * 2**i, cap) for i in range(n)]\n\
                ```\nDONE";
    let e = engine(&[guess, seen, "READ README.md", last]);
    let mut c = cfg("python3 test_retry.py fails: delays in retry.py never caps the wait.");
    c.focus = true;
    let out = session(&e, dir.path(), &c);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["unseen_file"],
        "{:?}",
        prompts(&e).last()
    );
    assert_eq!(out.reason, StopReason::Done);
    let p = &prompts(&e)[1];
    assert!(
        p.contains("sync.py not written: you had not seen it"),
        "{p}"
    );
    // Shown as it was, the guess never written.
    assert!(p.contains(&format!("sync.py\n```\n{SYNC}```")), "{p}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sync.py")).unwrap(),
        "from retry import delays\nprint(delays(3, 1, 5))\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
        "Retries with capped backoff.\n"
    );

    // A file the check runs, never shown, is refused as the check's (which says more).
    let dir = repo("whole-unseen-check", &files);
    let e = engine(&["test_retry.py\n```python\nprint('ok')\n```\n"]);
    let mut k = c.clone();
    k.max_turns = 1;
    k.task = "delays in retry.py never caps the wait.".to_owned();
    k.verify = Some(["python3", "test_retry.py"].map(String::from).to_vec());
    let out = session(&e, dir.path(), &k);
    assert!(
        !prompts(&e)[0].contains("test_retry.py\n```\n"),
        "{}",
        prompts(&e)[0]
    );
    assert_eq!(refusals(dir.path(), &out.session), ["check_file"]);

    // Not focused, every file is shown: the same guess is written (and judged as any).
    let dir = repo("whole-seen", &files);
    let e = engine(&[seen]);
    c.focus = false;
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert!(!refusals(dir.path(), &out.session).contains(&"unseen_file".to_owned()));
    assert!(
        std::fs::read_to_string(dir.path().join("sync.py"))
            .unwrap()
            .contains("delays(3")
    );
}

/// A file written whole without a function it has, which the task does not ask to remove,
/// is refused and nothing is written (the 0.5B asked to add a function writes only the new
/// one); the complete file is then taken.
#[test]
fn a_block_that_would_lose_a_function_is_refused() {
    const MATHX: &str = "def double(x):\n    return 2 * x\n";
    const BOTH: &str = "def double(x):\n    return 2 * x\n\n\ndef square(x):\n    return x * x\n";
    let dir = repo("whole-dropped", &[("mathx.py", MATHX)]);
    let only_new = "mathx.py\n```python\ndef square(x):\n    return x * x\n```\n";
    let both = format!("mathx.py\n```python\n{BOTH}```\nDONE");
    let e = engine(&[only_new, both.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Add a function square(x) to mathx.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["dropped_code"]);
    assert!(
        prompts(&e)[1].contains("mathx.py not written: it would lose double"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mathx.py")).unwrap(),
        BOTH
    );
}

/// A file written whole without a top-level setting it binds (`NAME = …`), which the task
/// neither names nor asks to remove, is refused and nothing is written (the 0.5B asked to
/// change MAX_RETRIES wrote config.py back without its first line); the complete file is
/// then taken. A setting moved under a main guard is not lost.
#[test]
fn a_block_that_would_lose_a_setting_is_refused() {
    const CONFIG: &str = "NAME = \"fetcher\"\nMAX_RETRIES = 3\nTIMEOUT = 10\n";
    const FIXED: &str = "NAME = \"fetcher\"\nMAX_RETRIES = 5\nTIMEOUT = 10\n";
    let dir = repo("whole-dropped-setting", &[("config.py", CONFIG)]);
    let lossy = "config.py\n```python\nMAX_RETRIES = 5\nTIMEOUT = 10\n```\n";
    let whole = format!("config.py\n```python\n{FIXED}```\nDONE");
    let e = engine(&[lossy, whole.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Change MAX_RETRIES from 3 to 5 in config.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["dropped_code"]);
    assert!(
        prompts(&e)[1].contains("config.py not written: it would lose NAME"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.py")).unwrap(),
        FIXED
    );
}

/// The 0.5B on two-blocks-one-file: settings.ini written back without its `[app]` section
/// and `name = demo`, then DONE. Refused as `dropped_code`, nothing written; the whole file
/// with both values set is taken.
#[test]
fn a_block_that_would_lose_a_settings_section_is_refused() {
    const INI: &str =
        "[server]\nhost = localhost\nport = 8000\n\n[app]\nname = demo\ndebug = true\n";
    const FIXED: &str =
        "[server]\nhost = localhost\nport = 8080\n\n[app]\nname = demo\ndebug = false\n";
    let dir = repo("whole-dropped-section", &[("settings.ini", INI)]);
    let lossy =
        "settings.ini\n```ini\n[server]\nhost = localhost\nport = 8080\ndebug = false\n```\n";
    let whole = format!("settings.ini\n```ini\n{FIXED}```\nDONE");
    let e = engine(&[lossy, whole.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("In settings.ini, set port to 8080 and debug to false."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["dropped_code"]);
    assert!(
        prompts(&e)[1].contains("settings.ini not written: it would lose [app], name"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("settings.ini")).unwrap(),
        FIXED
    );
}

/// The 1.5B on main-guard: it moved longest_word into report.py (the file had no such
/// definition), then wrote report.py back as it was. A definition the session added is its
/// own to take out again: the block is taken, not refused as `dropped_code`; one the file
/// had before the session stays protected.
#[test]
fn a_block_may_take_out_a_definition_the_session_added() {
    const REPORT: &str = "from textstats import word_count\n\nprint(word_count('a b'))\n";
    let moved = "from textstats import word_count\n\n\ndef longest_word(text):\n    return max(text.split(), key=len)\n\n\nprint(word_count('a b'))\n";
    let dir = repo(
        "whole-own-definition",
        &[
            ("report.py", REPORT),
            (
                "textstats.py",
                "def word_count(t):\n    return len(t.split())\n",
            ),
        ],
    );
    let first = format!("report.py\n```python\n{moved}```\n");
    let back = format!("report.py\n```python\n{REPORT}```\n");
    let stats_only = "textstats.py\n```python\nX = 1\n```\nDONE";
    let e = engine(&[first.as_str(), back.as_str(), stats_only, "DONE"]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Make report.py print the longest word too."),
    );
    let refused = refusals(dir.path(), &out.session);
    assert_eq!(
        refused.first().map(String::as_str),
        Some("dropped_code"),
        "{refused:?}"
    );
    assert_eq!(refused.iter().filter(|r| *r == "dropped_code").count(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("report.py")).unwrap(),
        REPORT
    );
    // word_count was the file's before the session: still protected.
    assert!(
        prompts(&e)[3].contains("textstats.py not written: it would lose word_count"),
        "{}",
        prompts(&e)[3]
    );
}

/// The 1.5B on backoff-cap: asked to fix `delays`, it wrote retry.py back with only `delays`
/// (fixed) in it. The block's definitions each name their place, so it is spliced into the
/// file (`partial_file_merged`, named in the commit and told), `call_with_retry` kept. A block
/// that also changes a module-level statement has no certain place: refused, nothing written.
#[test]
fn a_block_of_only_the_fixed_function_is_spliced_into_the_file() {
    const RETRY: &str = "import time\n\n\ndef delays(n, base, cap):\n    out = []\n    d = base\n    for _ in range(n):\n        out.append(d)\n        d = d * 2\n    return out\n\n\ndef call_with_retry(fn):\n    time.sleep(1)\n    return fn()\n";
    let fixed_fn = "def delays(n, base, cap):\n    out = []\n    d = base\n    for _ in range(n):\n        out.append(d)\n        d = min(d * 2, cap)\n    return out\n";
    let task =
        "delays(5, 1, 5) in retry.py gives [1, 2, 4, 8, 16]: no wait may be longer than cap.";

    let dir = repo("whole-spliced", &[("retry.py", RETRY)]);
    let reply = format!("retry.py\n```python\nimport time\n\n\n{fixed_fn}```\n");
    let e = engine(&[reply.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("retry.py")).unwrap(),
        RETRY.replace("d = d * 2", "d = min(d * 2, cap)")
    );
    assert!(refusals(dir.path(), &out.session).is_empty());
    let commits: Vec<Vec<String>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Commit { repairs, .. } => Some(repairs),
            _ => None,
        })
        .collect();
    assert_eq!(commits, [vec!["partial_file_merged".to_owned()]]);
    assert!(
        prompts(&e)[1].contains("your block held only delays")
            && prompts(&e)[1].contains("call_with_retry kept as they were"),
        "{}",
        prompts(&e)[1]
    );

    // A function rewritten through and through (no line of the file kept in the block): the
    // rest of the file is kept, so it is no replaced file.
    let dir = repo("whole-spliced-rewritten", &[("retry.py", RETRY)]);
    let rewritten = "retry.py\n```python\ndef delays(n, base, cap=5):\n    return [min(base * 2**i, cap) for i in range(n)]\n```\n";
    let e = engine(&[rewritten]);
    let mut c = cfg(task);
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert!(refusals(dir.path(), &out.session).is_empty());
    let now = std::fs::read_to_string(dir.path().join("retry.py")).unwrap();
    assert!(
        now.contains("return [min(base * 2**i, cap)") && now.contains("def call_with_retry(fn):")
    );

    // A changed statement beside the function: refused, the file as it was.
    let dir = repo("whole-not-spliced", &[("retry.py", RETRY)]);
    let reply = format!("retry.py\n```python\nimport time\nCAP = 5\n\n\n{fixed_fn}```\n");
    let e = engine(&[reply.as_str()]);
    let mut c = cfg(task);
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(refusals(dir.path(), &out.session), ["dropped_code"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("retry.py")).unwrap(),
        RETRY
    );

    // The function as the file has it: nothing changes, and the model is told so.
    let dir = repo("whole-spliced-same", &[("retry.py", RETRY)]);
    let same = RETRY.split("\n\n\ndef call").next().unwrap();
    let reply = format!("retry.py\n```python\n{same}\n```\n");
    let e = engine(&[reply.as_str(), "DONE"]);
    let mut c = cfg(task);
    c.max_turns = 2;
    let out = session(&e, dir.path(), &c);
    assert_eq!(refusals(dir.path(), &out.session), ["no_change"]);
    assert!(
        prompts(&e)[1].contains("retry.py not changed: your block holds delays exactly"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("retry.py")).unwrap(),
        RETRY
    );
}

/// The 1.5B on rename-config-key: asked to rename a key, it wrote client.py back with the key
/// renamed and without the `if __name__ == "__main__":` lines at its end. They are kept at
/// the end (`partial_file_merged`, told); a task about the main block writes it as it comes;
/// a block that is the file less only those lines changes nothing and is told so.
#[test]
fn a_block_without_the_files_main_lines_keeps_them() {
    const CLIENT: &str = "import sys\n\nimport config\n\n\ndef plan(cfg):\n    return f\"timeout {cfg['timeout']}\"\n\n\nif __name__ == \"__main__\":\n    print(plan(config.load(*sys.argv[1:2])))\n";
    let renamed = "import sys\n\nimport config\n\n\ndef plan(cfg):\n    return f\"timeout {cfg['timeout_seconds']}\"\n";
    let task = "Rename the setting `timeout` to `timeout_seconds` everywhere.";

    let dir = repo("whole-guard-kept", &[("client.py", CLIENT)]);
    let reply = format!("client.py\n```python\n{renamed}```\n");
    let e = engine(&[reply.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("client.py")).unwrap(),
        CLIENT.replace("cfg['timeout']", "cfg['timeout_seconds']")
    );
    let commits: Vec<Vec<String>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Commit { repairs, .. } => Some(repairs),
            _ => None,
        })
        .collect();
    assert_eq!(commits, [vec!["partial_file_merged".to_owned()]]);
    assert!(
        prompts(&e)[1].contains("left out the file's `if __name__ == \"__main__\":` lines"),
        "{}",
        prompts(&e)[1]
    );

    // The task asks about the entry point: the block is written as it came.
    let dir = repo("whole-guard-asked", &[("client.py", CLIENT)]);
    let e = engine(&[reply.as_str()]);
    let mut c = cfg(
        "Make client.py a library: remove its main block and rename `timeout` to `timeout_seconds`.",
    );
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("client.py")).unwrap(),
        renamed
    );

    // The file less its main lines: nothing changes, and the model is told so.
    let dir = repo("whole-guard-same", &[("client.py", CLIENT)]);
    let same = CLIENT.split("\n\n\nif __name__").next().unwrap();
    let reply = format!("client.py\n```python\n{same}\n```\n");
    let e = engine(&[reply.as_str(), "DONE"]);
    let mut c = cfg(task);
    c.max_turns = 2;
    let out = session(&e, dir.path(), &c);
    assert_eq!(refusals(dir.path(), &out.session), ["no_change"]);
    assert!(
        prompts(&e)[1].contains("client.py not changed: your block is the file as it is, less"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("client.py")).unwrap(),
        CLIENT
    );
}

/// A file written over with none of its lines kept, where the task asks for a fix and no
/// rewrite, is refused and nothing is written (the 0.5B wrote unrelated code over README.md
/// when asked to fix a typo and said DONE); the fixed file is then taken. A task that asks
/// for the file to be replaced may replace it.
#[test]
fn a_block_that_keeps_none_of_the_file_is_refused_unless_the_task_replaces_it() {
    const README: &str = "# mailer\n\nThe mailer will recieve messages.\nIt forwards them.\n";
    const FIXED: &str = "# mailer\n\nThe mailer will receive messages.\nIt forwards them.\n";
    let dir = repo("whole-replaced", &[("README.md", README)]);
    let unrelated = "README.md\n```\nimport os\nprint(os.getcwd())\nx = 1\n```\nDONE";
    let fixed = format!("README.md\n```\n{FIXED}```\nDONE");
    let e = engine(&[unrelated, fixed.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Fix the spelling mistake in README.md."),
    );
    assert_eq!(out.reason, StopReason::Done);
    // The DONE of the same reply finds nothing changed.
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["replaced_file", "no_change"]
    );
    assert!(
        prompts(&e)[1]
            .contains("README.md not written: your block keeps none of its 3 non-blank lines"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
        FIXED
    );

    // Asked to replace the file, the same block is written.
    let dir = repo("whole-replaced-asked", &[("README.md", README)]);
    let e = engine(&[unrelated]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Replace README.md with a Python script that prints the working directory."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
    assert!(
        std::fs::read_to_string(dir.path().join("README.md"))
            .unwrap()
            .starts_with("import os")
    );
}

/// A DONE while a file the task says to delete is still there is refused (`file_left`), and
/// taken once it is gone.
#[test]
fn done_waits_for_the_file_the_task_deletes() {
    let dir = repo(
        "whole-file-left",
        &[("old.txt", "x\n"), ("notes.txt", "n\n")],
    );
    let wrong = "notes.txt\n```\nold.txt\n```\nDONE";
    let e = engine(&[wrong, "DELETE old.txt\nDONE"]);
    let out = session(&e, dir.path(), &cfg("Delete the obsolete file old.txt."));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    assert_eq!(refusals(dir.path(), &out.session), ["file_left"]);
    assert!(prompts(&e)[1].contains("DONE refused: the task says to delete old.txt"));
    assert!(!dir.path().join("old.txt").exists());
}

/// A DELETE of a file the task does not name, when it names the one to delete, is refused
/// and the file stays (the 0.5B deleted notes.txt beside old_notes.txt); so is one in a task
/// that asks for nothing to go.
#[test]
fn a_delete_the_task_does_not_ask_for_is_refused() {
    let dir = repo(
        "whole-delete-unasked",
        &[("old_notes.txt", "x\n"), ("notes.txt", "n\n")],
    );
    let e = engine(&["DELETE old_notes.txt\nDELETE notes.txt\nDONE"]);
    let mut c = cfg("Delete the obsolete file old_notes.txt.");
    c.actions_per_turn = 0;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["delete_unasked"]);
    assert!(!dir.path().join("old_notes.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "n\n"
    );

    let dir = repo(
        "whole-delete-fix",
        &[("README.md", "teh app\n"), ("notes.txt", "n\n")],
    );
    let e = engine(&["DELETE notes.txt", "README.md\n```\nthe app\n```\nDONE"]);
    let out = session(&e, dir.path(), &cfg("Fix the typo in README.md."));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["delete_unasked"]);
    assert!(prompts(&e)[1].contains("notes.txt not deleted: the task asks for no file to go"));
    assert!(dir.path().join("notes.txt").exists());
}

/// With a check, the implied DONE is checked like a written one: rejected and fed back while
/// the check fails (counted), accepted once it passes — and a resume counts it the same way.
#[test]
fn an_implied_done_is_checked_like_a_written_one() {
    let dir = repo("whole-settle-check", &[("stats.py", STATS)]);
    let wrong = "stats.py\n```\ndef mean(xs):\n    return 0\n```\n";
    let right = format!("stats.py\n```\n{FIXED}```\n");
    let e = engine(&[wrong, wrong, right.as_str(), right.as_str()]);
    let mut c = cfg("fix mean");
    c.verify = Some(fixed_check());
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(out.turns, 4);
    assert_eq!(out.false_successes, 1);
    let p = prompts(&e);
    assert!(p[2].contains("DONE (implied"), "{}", p[2]);
    assert!(p[2].contains("rejected"), "{}", p[2]);

    let dir = repo("whole-settle-resume", &[("stats.py", STATS)]);
    let e = engine(&[wrong, wrong]);
    c.max_turns = 2;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    assert_eq!(first.false_successes, 1);
    let e2 = engine(&[right.as_str(), right.as_str()]);
    let out = resume(&e2, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(out.false_successes, 1);
    assert!(prompts(&e2)[0].contains("DONE (implied"));
}

/// A block that copies the diff a change's observation showed (`+` lines, `</output>`) is
/// refused as `diff_in_file`, and the file keeps its content.
#[test]
fn a_diff_copied_into_a_block_is_not_written() {
    let dir = repo("whole-diff", &[("stats.py", FIXED)]);
    let copied = "stats.py\n```\ndef mean(xs):\n    total = 0\n+    for i in range(0, len(xs)):\n</output>\n```\n";
    let e = engine(&[copied, "DONE"]);
    let mut c = cfg("fix mean");
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
    assert_eq!(malformed(dir.path(), &out.session), ["diff_in_file"]);
}

/// A turn that makes no progress (every file written back unchanged) is followed by a warmer
/// sample with a seed of its own, warmer still after another; a turn that changes the
/// repository brings the configured sampling back — live and after a resume alike.
#[test]
fn a_turn_without_progress_warms_the_next_sample() {
    let dir = repo("whole-stuck", &[("stats.py", STATS)]);
    let same = format!("stats.py\n```\n{STATS}```\n");
    let fixed = format!("stats.py\n```\n{FIXED}```\n");
    let e = engine(&[same.as_str(), "READ nothing.py", fixed.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("fix mean"));
    assert_eq!(out.reason, StopReason::Done);
    let sampling: Vec<(f32, Option<u32>)> = e
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.sampling.temperature, r.sampling.seed))
        .collect();
    assert_eq!(sampling.len(), 4);
    assert_eq!(sampling[0], (0.0, None));
    assert_eq!(sampling[1].0, agent::config::DEFAULT_STUCK_TEMPERATURE);
    assert!((sampling[2].0 - (agent::config::DEFAULT_STUCK_TEMPERATURE + 0.15)).abs() < 1e-6);
    assert!(sampling[1].1.is_some() && sampling[1].1 != sampling[2].1);
    assert_eq!(sampling[3], (0.0, None));

    // Off: every turn as configured.
    let dir = repo("whole-stuck-off", &[("stats.py", STATS)]);
    let e = engine(&[same.as_str(), fixed.as_str(), "DONE"]);
    let mut c = cfg("fix mean");
    c.stuck_temperature = 0.0;
    session(&e, dir.path(), &c);
    assert!(
        e.seen
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.sampling.temperature == 0.0)
    );

    // A resume counts the stuck turns from the journal.
    let dir = repo("whole-stuck-resume", &[("stats.py", STATS)]);
    let e = engine(&[same.as_str()]);
    let mut c = cfg("fix mean");
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    let e2 = engine(&[fixed.as_str()]);
    resume(&e2, dir.path(), &c, &first.session);
    let seen = e2.seen.lock().unwrap();
    assert_eq!(
        seen[0].sampling.temperature,
        agent::config::DEFAULT_STUCK_TEMPERATURE
    );
}

/// A reply that only copied files back unchanged stands in history as one line naming them,
/// so the next prompt holds no copy to be copied again — live and after a resume.
#[test]
fn files_copied_back_unchanged_stand_in_history_as_a_note_not_a_turn() {
    let dir = repo("whole-copied", &[("stats.py", STATS), ("notes.txt", "n\n")]);
    let same = format!("stats.py\n```\n{STATS}```\nnotes.txt\n```\nn\n```\n");
    let e = engine(&[same.as_str()]);
    let mut c = cfg("fix mean");
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    let fixed = format!("stats.py\n```\n{FIXED}```\n");
    let e2 = engine(&[fixed.as_str(), "DONE"]);
    resume(&e2, dir.path(), &c, &first.session);
    let next = &prompts(&e2)[0];
    // No reply of the model's for it to copy: the turn is a note after the task.
    assert!(!next.contains("<assistant>"), "{next}");
    assert!(
        next.contains(
            "\n\nYour last reply changed nothing (stats.py not changed: your block is the file \
             exactly as it is; notes.txt not changed: your block is the file exactly as it is). \
             The task is not done in it yet. Reply in two parts"
        ),
        "{next}"
    );
    assert_eq!(
        next.matches("for i in range(1, len(xs))").count(),
        1,
        "{next}"
    );
}

/// What a task adds by name must be in a file the session changed, and the text it gives a
/// new file must be in it: a DONE before is refused (`name_missing`, `content_missing`) and
/// said why; a resume counts the refusals the same way.
#[test]
fn done_waits_for_the_name_the_task_adds_and_the_text_it_gives_a_file() {
    let dir = repo(
        "whole-name",
        &[("mathx.py", "def double(x):\n    return 2 * x\n")],
    );
    let wrong = "mathx.py\n```python\ndef double(x):\n    return x * x\n```\nDONE";
    let right = "mathx.py\n```python\ndef double(x):\n    return 2 * x\n\n\ndef square(x):\n    return x * x\n```\nDONE";
    let e = engine(&[wrong, right]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Add a function square(x) to mathx.py that returns x times x."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["name_missing"]);
    assert!(
        prompts(&e)[1].contains(
            "DONE refused: the task asks you to add square, and no file you changed has it"
        ),
        "{}",
        prompts(&e)[1]
    );

    let dir = repo("whole-content", &[("README.md", "# demo\n")]);
    let task = "Create a file hello.txt containing the single line: hello, world";
    let empty = "hello.txt\n```\nhello.txt\n```\nDONE";
    let right = "hello.txt\n```\nhello, world\n```\nDONE";
    let mut c = cfg(task);
    c.max_turns = 1;
    let first = session(&engine(&[empty]), dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    assert_eq!(refusals(dir.path(), &first.session), ["content_missing"]);
    c.max_turns = 2;
    let e = engine(&[right]);
    let out = resume(&e, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hello, world\n"
    );
}

/// A function the task calls dead and says to delete must be gone at DONE, though the
/// task's check passes with it (`definition_left`); the file written without it is taken.
#[test]
fn done_waits_for_the_dead_function_to_go() {
    let conf = "def parse(t):\n    return t\n\n\ndef legacy_parse(t):\n    return t\n";
    let dir = repo(
        "whole-dead",
        &[
            ("confparse.py", conf),
            (
                "test_confparse.py",
                "import confparse\nassert confparse.parse('a') == 'a'\n",
            ),
        ],
    );
    let elsewhere = "notes.txt\n```\nlegacy_parse is unused\n```\nDONE";
    let right = "confparse.py\n```python\ndef parse(t):\n    return t\n```\nDONE";
    let e = engine(&[elsewhere, right]);
    let mut c = cfg(
        "legacy_parse in confparse.py is dead code: nothing calls it any more. Delete it \
         without changing what the program does.",
    );
    c.verify = Some(vec!["python3".into(), "test_confparse.py".into()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(refusals(dir.path(), &out.session), ["definition_left"]);
    assert!(
        prompts(&e)[1].contains(
            "DONE refused: the task says to delete legacy_parse, and confparse.py still defines it"
        ),
        "{}",
        prompts(&e)[1]
    );
}

/// The example's file written with other content, in a repository without it and for a task
/// that does not name it, is an echo too; in a repository that has a colors.py it is a file.
#[test]
fn the_examples_file_is_no_scratch_file() {
    let dir = repo("whole-example-file", &[("client.py", "T = 30\n")]);
    let reply = "colors.py\n```python\nTIMEOUT = 30\n```\nclient.py\n```python\nT = 31\n```\nDONE";
    let e = engine(&[reply]);
    let out = session(&e, dir.path(), &cfg("Make T 31 in client.py."));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.echoes, 1);
    assert!(!dir.path().join("colors.py").exists());

    let dir = repo("whole-real-colors", &[("colors.py", "RED = 1\n")]);
    let e = engine(&["colors.py\n```python\nRED = 2\n```\nDONE"]);
    let out = session(&e, dir.path(), &cfg("Make RED 2."));
    assert_eq!((out.reason, out.echoes), (StopReason::Done, 0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("colors.py")).unwrap(),
        "RED = 2\n"
    );
}

/// A reply that starts with the instructions' example block, then makes the real change:
/// the change is written, and the next prompt shows the reply without the example block and
/// without what its echo was told (the 0.5B, shown both, wrote the block again every turn).
#[test]
fn history_shows_a_reply_without_the_examples_block() {
    let dir = repo("whole-example-block", &[("a.py", "X = 1\n")]);
    let example = format!(
        "{}\n```python\n{}```\n",
        codec::registry::WHOLE_EXAMPLE_PATH,
        codec::registry::WHOLE_EXAMPLE_CONTENT
    );
    let first = format!("{example}\na.py\n```python\nX = 2\n```\n");
    let e = engine(&[first.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg("Set X to 2 in a.py."));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "X = 2\n"
    );
    let p = prompts(&e);
    let examples = |s: &str| s.matches("def hex_color").count();
    assert_eq!(examples(&p[1]), examples(&p[0]), "{}", p[1]);
    assert!(p[1].contains("a.py\n```python\nX = 2\n```"), "{}", p[1]);
    assert!(
        !p[1].contains("the example from the instructions"),
        "{}",
        p[1]
    );
    // The journal keeps the reply as it came.
    assert_eq!(refusals(dir.path(), &out.session), ["echo"]);
}

/// A block that writes a file back as it is, in a task that asks to delete another, is told
/// the verb line that does it (the 0.5B wrote notes.txt back turn after turn); so is one in a
/// task that asks for a rename.
#[test]
fn an_unchanged_block_in_a_delete_or_rename_task_is_told_the_verb() {
    let dir = repo(
        "whole-unchanged-delete",
        &[("old.txt", "x\n"), ("notes.txt", "n\n")],
    );
    let e = engine(&["notes.txt\n```\nn\n```\n", "DELETE old.txt\nDONE"]);
    let out = session(&e, dir.path(), &cfg("Delete the obsolete file old.txt."));
    assert_eq!(out.reason, StopReason::Done);
    let p = prompts(&e);
    assert!(
        p[1].contains("The task asks to delete old.txt: reply DELETE old.txt on a line of its own"),
        "{}",
        p[1]
    );
    assert!(!dir.path().join("old.txt").exists());

    let dir = repo("whole-unchanged-rename", &[("a.py", "X = 1\n")]);
    let e = engine(&["a.py\n```\nX = 1\n```\n", "MOVE a.py -> b.py\nDONE"]);
    let out = session(&e, dir.path(), &cfg("Rename a.py to b.py."));
    assert_eq!(out.reason, StopReason::Done);
    assert!(
        prompts(&e)[1].contains("reply MOVE a.py -> b.py on a line of its own"),
        "{}",
        prompts(&e)[1]
    );
    assert!(dir.path().join("b.py").exists());
}

/// A module of `n` small functions, one line of code each: `n * 3` lines.
fn long_module(n: usize) -> String {
    (1..=n)
        .map(|k| format!("def f{k}():\n    return {k}\n\n"))
        .collect()
}

/// A file longer than `edit_blocks_over` is shown with how to change it by edit blocks; an
/// edit block under its path changes the lines it names and no other; a block whose SEARCH
/// lines are not in the file writes nothing and is told, and the file stays as it was. A
/// short file beside it is still written whole, and its message says nothing of edit blocks.
#[test]
fn a_long_file_is_changed_by_edit_blocks_and_a_search_not_found_leaves_it_as_it_was() {
    let long = long_module(30);
    let dir = repo(
        "whole-long",
        &[("lib.py", long.as_str()), ("main.py", "x = 1\n")],
    );
    let missing = "lib.py\n```python\n<<<<<<< SEARCH\ndef f99():\n    return 99\n=======\ndef f99():\n    return 0\n>>>>>>> REPLACE\n```\n";
    let edit = "lib.py\n```python\n<<<<<<< SEARCH\ndef f7():\n    return 7\n=======\ndef f7():\n    return 70\n>>>>>>> REPLACE\n```\nmain.py\n```python\nx = 2\n```\n";
    let e = engine(&[missing, edit, "DONE"]);
    let mut c = cfg("f7 in lib.py should return 70, and x in main.py should be 2");
    c.long_files = Some(agent::whole::LongFiles {
        over: 60,
        by: agent::whole::LongEdit::Blocks,
    });
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done, "{:?}", prompts(&e));
    let first = &prompts(&e)[0];
    assert!(
        first.contains("lib.py is long: do not write it whole"),
        "{first}"
    );
    assert!(first.contains("<<<<<<< SEARCH"), "{first}");
    assert!(
        first.contains("For lib.py, write edit blocks as said above instead."),
        "{first}"
    );
    // After the failed block, the file was as it was.
    let second = &prompts(&e)[1];
    assert!(second.contains("f99"), "{second}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib.py")).unwrap(),
        long.replace("return 7\n", "return 70\n")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.py")).unwrap(),
        "x = 2\n"
    );
    // The block that matched nothing was an edit that failed, told as such.
    let failed: Vec<String> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Observation {
                turn: 1,
                ok: false,
                summary,
                ..
            } => Some(summary),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1, "{second}");

    // The same files under the limit: no note, and the old closing.
    let dir = repo("whole-long-off", &[("lib.py", long.as_str())]);
    let e = engine(&["DONE"]);
    let mut c = cfg("f7 in lib.py should return 70");
    c.long_files = None;
    session(&e, dir.path(), &c);
    let first = &prompts(&e)[0];
    assert!(!first.contains("SEARCH"), "{first}");
    assert!(first.ends_with("complete new content in a fenced code block."));
}

/// Asked for only the functions that change, the model writes one function under the long
/// file's path: it is spliced in, every other definition kept. A README over the limit gets
/// edit blocks, as the splice cannot read it.
#[test]
fn a_long_file_is_changed_by_writing_only_the_functions_that_change() {
    let long = long_module(30);
    let readme: String = (1..=70).map(|k| format!("line {k}\n")).collect();
    let dir = repo(
        "whole-long-defs",
        &[("lib.py", long.as_str()), ("README.md", readme.as_str())],
    );
    let reply = "lib.py\n```python\ndef f7():\n    return 70\n```\n";
    let e = engine(&[reply, "DONE"]);
    let mut c = cfg("f7 in lib.py should return 70");
    c.long_files = Some(agent::whole::LongFiles {
        over: 60,
        by: agent::whole::LongEdit::Definitions,
    });
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done, "{:?}", prompts(&e));
    let first = &prompts(&e)[0];
    assert!(
        first.contains("lib.py is long: do not write it whole. Under the path, write only the functions you change or add, each complete"),
        "{first}"
    );
    assert!(first.contains("README.md is long"), "{first}");
    for closing in [
        "For lib.py, write only the functions you change as said above instead.",
        "For README.md, write edit blocks as said above instead.",
    ] {
        assert!(first.contains(closing), "{first}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib.py")).unwrap(),
        long.replace("return 7\n", "return 70\n")
    );
}
