//! The harness a small coder model works in: READ's numbered lines and the errors of a range
//! it got wrong, empty results that say so, a hint on every error, CREATE replacing a small
//! file whole, DONE refused while nothing changed (live and after a resume), and the start
//! context the first message carries.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use std::path::Path;

use agent::act::{self, Observation, Plan};
use agent::{ApprovalMode, Config, Event, Policy, StopReason, Workspace};
use codec::{Action, Block};
use common::{engine, events, prompts, repo, resume, session};
use models::{Prompt, ScriptedEngine};

fn cfg(task: &str) -> Config {
    let mut c = Config::new(task, Policy::new(ApprovalMode::Auto));
    c.max_turns = 8;
    c.reply_reserve = 200;
    c
}

/// The first user message of the first prompt.
fn first_message(engine: &ScriptedEngine) -> String {
    match &engine.seen.lock().unwrap()[0].prompt {
        Prompt::Chat { messages, .. } => messages[1].content.clone(),
        Prompt::Text(t) => t.clone(),
    }
}

/// What `action` tells the model, answered or refused.
fn observe(dir: &Path, action: Action) -> Observation {
    let ws = Workspace::new(dir).unwrap();
    match act::plan(&ws, &action) {
        Ok(Plan::Observed(obs)) | Err(obs) => obs,
        Ok(other) => panic!("not an observation: {other:?}"),
    }
}

fn read(path: &str, start: Option<u64>, end: Option<u64>) -> Action {
    Action::Read {
        path: path.to_owned(),
        start,
        end,
    }
}

fn edit(path: &str, search: &str, replace: &str) -> Action {
    Action::Edit {
        path: path.to_owned(),
        blocks: vec![Block {
            search: search.to_owned(),
            replace: replace.to_owned(),
        }],
    }
}

/// `n` lines `line 1` … `line n`.
fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

const EDIT_A: &str = "EDIT a.txt\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";
const EDIT_BACK: &str = "EDIT a.txt\n<<<<<<< SEARCH\nnew\n=======\nold\n>>>>>>> REPLACE\n";

// ---------------------------------------------------------------------------------------
// Observations.

#[test]
fn read_numbers_its_lines_and_says_which_of_how_many() {
    let dir = repo("read", &[("m.py", &lines(10)), ("empty.py", "")]);
    let whole = observe(dir.path(), read("m.py", None, None));
    assert_eq!(
        (whole.ok, whole.summary.as_str()),
        (true, "m.py (10 lines)")
    );
    assert!(whole.output.starts_with("  1| line 1\n  2| line 2\n"));
    assert!(whole.output.ends_with(" 10| line 10\n"), "{}", whole.output);
    let part = observe(dir.path(), read("m.py", Some(3), Some(4)));
    assert_eq!(part.summary, "m.py lines 3-4 of 10");
    assert_eq!(part.output, "  3| line 3\n  4| line 4\n");
    // An end past the last line is cut there, and said so.
    let tail = observe(dir.path(), read("m.py", Some(9), Some(50)));
    assert!(tail.ok && tail.summary.contains("the file ends at line 10"));
    assert_eq!(tail.output, "  9| line 9\n 10| line 10\n");
    // An empty file says it is empty.
    let empty = observe(dir.path(), read("empty.py", None, None));
    assert!(empty.ok && empty.summary.contains("is empty") && empty.output.is_empty());
}

#[test]
fn a_range_past_the_end_or_reversed_is_an_error_showing_the_files_extent() {
    let dir = repo("read-past", &[("m.py", &lines(25))]);
    let past = observe(dir.path(), read("m.py", Some(100_000), Some(100_000)));
    assert!(!past.ok);
    assert!(
        past.summary
            .contains("m.py has 25 lines; line 100000 is past its end"),
        "{}",
        past.summary
    );
    // Its last lines, numbered, and how to read within it.
    assert!(past.output.starts_with(" 16| line 16\n") && past.output.ends_with(" 25| line 25\n"));
    assert!(past.hint.unwrap().contains("1-25"));
    let reversed = observe(dir.path(), read("m.py", Some(9), Some(3)));
    assert!(!reversed.ok && reversed.summary.contains("ends before it starts"));
    assert!(reversed.hint.unwrap().contains("READ m.py:3-9"));
}

/// The measured failure: Qwen2.5-Coder-0.5B read past the end of a 10-line file, got an empty
/// "ok", and its DONE was accepted. Now the READ is an error and the DONE is refused.
#[test]
fn a_read_past_the_end_then_done_is_no_success() {
    let dir = repo("read-done", &[("messages.py", &lines(10))]);
    let e = engine(&[
        "READ messages.py:100000-100000\n",
        "DONE <output> looks fine\n",
    ]);
    let out = session(&e, dir.path(), &cfg("fix messages.py"));
    assert_eq!((out.reason, out.no_change), (StopReason::Stall, 1));
    let p = prompts(&e);
    assert!(
        p[1].contains("[error] messages.py has 10 lines; line 100000 is past its end"),
        "{}",
        p[1]
    );
    assert!(p[2].contains("DONE refused: nothing in the repository has changed"));
}

#[test]
fn empty_results_say_so_and_every_error_has_a_hint() {
    let dir = repo(
        "empty",
        &[
            ("a.py", "x = 1\nx = 1\n"),
            ("big.py", &lines(250)),
            ("bin.dat", "\u{0}\u{fffd}"),
        ],
    );
    std::fs::create_dir(dir.path().join("nothing")).unwrap();
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
    let grep = observe(
        dir.path(),
        Action::Grep {
            pattern: "zebra".to_owned(),
            path: None,
        },
    );
    assert!(grep.summary.starts_with("0 matches for \"zebra\"") && grep.hint.is_some());
    let glob = observe(
        dir.path(),
        Action::Glob {
            pattern: "*.rs".to_owned(),
        },
    );
    assert!(glob.summary.starts_with("0 files match *.rs") && glob.hint.is_some());
    let list = observe(
        dir.path(),
        Action::List {
            path: "nothing".to_owned(),
        },
    );
    assert!(list.summary.contains("empty directory"), "{}", list.summary);

    let errors = [
        read("missing.py", None, None),
        read("a.py", Some(5), Some(6)),
        read("latin1.txt", None, None),
        read("../x", None, None),
        edit("a.py", "y = 2\n", "y = 3\n"),
        edit("a.py", "x = 1\n", "x = 2\n"),
        edit("a.py", "x = 1\nx = 1\n", "x = 1\nx = 1\n"),
        Action::Create {
            path: "big.py".to_owned(),
            content: "short\n".to_owned(),
        },
        Action::Delete {
            path: "missing.py".to_owned(),
        },
        Action::Move {
            from: "a.py".to_owned(),
            to: "big.py".to_owned(),
        },
        Action::List {
            path: "missing".to_owned(),
        },
    ];
    for action in errors {
        let obs = observe(dir.path(), action.clone());
        assert!(!obs.ok, "{action:?}: {obs:?}");
        assert!(obs.hint.is_some(), "{action:?} has no hint: {obs:?}");
    }
}

#[test]
fn a_command_without_output_says_so_and_a_failing_one_has_a_hint() {
    let dir = repo("run-empty", &[("a.txt", "old\n")]);
    let e = engine(&["RUN true\n", "RUN false\n"]);
    let mut c = cfg("check");
    c.max_turns = 3;
    session(&e, dir.path(), &c);
    let p = prompts(&e);
    assert!(p[1].contains("[ok] exit code 0, no output"), "{}", p[1]);
    assert!(p[2].contains("[error] exit code 1, no output\nhint: the command failed"));
}

// ---------------------------------------------------------------------------------------
// Whole-file CREATE.

#[test]
fn create_on_a_small_existing_file_replaces_it_whole_and_undo_restores_it() {
    let dir = repo("create-whole", &[("greet.py", "print('Hi')\n")]);
    let e = engine(&[
        "CREATE greet.py\n<<<<<<< SEARCH\n=======\nprint('Hello')\n>>>>>>> REPLACE\n",
        "DONE greets\n",
    ]);
    let out = session(&e, dir.path(), &cfg("greet with Hello"));
    assert_eq!(out.reason, StopReason::Done);
    let now = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    assert_eq!(now, "print('Hello')\n");
    let p = prompts(&e);
    assert!(
        p[1].contains("[ok] replaced the whole file greet.py (1 lines before, 1 now)"),
        "{}",
        p[1]
    );
    assert!(p[1].contains("-print('Hi')\n+print('Hello')"), "{}", p[1]);
    // Journaled with its pre-image like any edit, so undo restores it.
    let pre = events(dir.path(), &out.session)
        .into_iter()
        .find_map(|e| match e {
            Event::Commit { pre_sha256, .. } => Some(pre_sha256),
            _ => None,
        })
        .unwrap();
    assert_eq!(pre, Some(act::sha256(b"print('Hi')\n")));
    let ws = Workspace::new(dir.path()).unwrap();
    agent::undo(&ws, Some(&out.session), 1, false).unwrap();
    let back = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    assert_eq!(back, "print('Hi')\n");
}

#[test]
fn create_refuses_a_long_existing_file_and_an_identical_one() {
    let dir = repo("create-long", &[("big.py", &lines(201)), ("s.py", "x\n")]);
    let create = |path: &str, content: &str| Action::Create {
        path: path.to_owned(),
        content: content.to_owned(),
    };
    let long = observe(dir.path(), create("big.py", "x\n"));
    assert!(
        long.summary.contains("201 lines, more than 200"),
        "{}",
        long.summary
    );
    assert!(long.hint.unwrap().contains("EDIT"));
    let same = observe(dir.path(), create("s.py", "x\n"));
    assert!(!same.ok && same.summary.contains("nothing to change"));
    // Exactly 200 lines may still be replaced.
    std::fs::write(dir.path().join("big.py"), lines(200)).unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    assert!(matches!(
        act::plan(&ws, &create("big.py", "x\n")),
        Ok(Plan::Change { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// DONE means done.

#[test]
fn done_without_a_change_is_refused_and_accepted_after_an_edit() {
    let dir = repo("no-change", &[("a.txt", "old\n")]);
    let e = engine(&["READ a.txt\n", "DONE it is fine\n", EDIT_A, "DONE fixed\n"]);
    let out = session(&e, dir.path(), &cfg("fix a.txt"));
    assert_eq!((out.reason, out.turns), (StopReason::Done, 4));
    assert_eq!((out.no_change, out.premature_done), (1, 0));
    let p = prompts(&e);
    assert!(
        p[2].contains("DONE refused: nothing in the repository has changed"),
        "{}",
        p[2]
    );
    let refused: Vec<(u32, String)> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Refused { turn, why } => Some((turn, why)),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [(2, "no_change".to_owned())]);
}

#[test]
fn an_edit_undone_back_to_the_original_bytes_is_no_change() {
    let dir = repo("undone", &[("a.txt", "old\n")]);
    let e = engine(&[EDIT_A, EDIT_BACK, "DONE\n"]);
    let out = session(&e, dir.path(), &cfg("fix a.txt"));
    assert_eq!((out.reason, out.no_change), (StopReason::Stall, 1));
    // Both edits were committed: it is the tree that is as it was.
    let commits = events(dir.path(), &out.session)
        .into_iter()
        .filter(|e| matches!(e, Event::Commit { .. }))
        .count();
    assert_eq!(commits, 2);
}

/// MKDIR of a name the task gives a file is refused before the directory exists; the MOVE
/// after it goes through.
#[test]
fn a_directory_where_the_task_names_a_file_is_refused() {
    let dir = repo("mkdir-file", &[("strutil.py", "x = 1\n")]);
    let e = engine(&[
        "MKDIR text_utils.py\n",
        "MOVE strutil.py -> text_utils.py\n",
        "DONE\n",
    ]);
    let out = session(&e, dir.path(), &cfg("Rename strutil.py to text_utils.py."));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(common::refusals(dir.path(), &out.session), ["mkdir_file"]);
    assert!(dir.path().join("text_utils.py").is_file());
    assert!(prompts(&e)[1].contains("text_utils.py is a file the task names"));
}

/// An empty directory made is a change: "make a directory build" is done by MKDIR alone.
#[test]
fn an_empty_directory_made_is_a_change() {
    let dir = repo("mkdir-change", &[("a.txt", "old\n")]);
    let e = engine(&["MKDIR build\n", "DONE\n"]);
    let out = session(&e, dir.path(), &cfg("make an empty directory build"));
    assert_eq!((out.reason, out.no_change), (StopReason::Done, 0));
    assert!(dir.path().join("build").is_dir());
}

#[test]
fn a_command_that_changes_a_file_is_a_change_and_a_cache_it_writes_is_not() {
    let dir = repo("run-change", &[("a.txt", "old\n")]);
    let e = engine(&[
        "RUN sh -c 'mkdir -p __pycache__ && echo x > __pycache__/a.cpython-312.pyc'\n",
        "DONE\n",
    ]);
    let out = session(&e, dir.path(), &cfg("fix a.txt"));
    assert!(dir.path().join("__pycache__/a.cpython-312.pyc").exists());
    assert_eq!((out.reason, out.no_change), (StopReason::Stall, 1));

    let e = engine(&["RUN cp a.txt b.txt\n", "DONE copied\n"]);
    let out = session(&e, dir.path(), &cfg("copy a.txt"));
    assert_eq!((out.reason, out.no_change), (StopReason::Done, 0));
}

#[test]
fn a_resumed_session_judges_done_against_the_tree_it_first_started_with() {
    // Changed before the cut: a DONE after the resume is accepted.
    let dir = repo("resume-changed", &[("a.txt", "old\n")]);
    let mut c = cfg("fix a.txt");
    c.max_turns = 1;
    let cut = session(&engine(&[EDIT_A]), dir.path(), &c);
    c.max_turns = 3;
    let out = resume(&engine(&["DONE fixed\n"]), dir.path(), &c, &cut.session);
    assert_eq!((out.reason, out.no_change), (StopReason::Done, 0));
    // Both runs journal the first run's fingerprint.
    let trees: Vec<Option<String>> = events(dir.path(), &cut.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Start { tree_sha256, .. } => Some(tree_sha256),
            _ => None,
        })
        .collect();
    assert_eq!(trees.len(), 2);
    assert!(trees[0].is_some() && trees[0] == trees[1]);

    // Unchanged: refused, and the refusal is counted again after a second resume.
    let dir = repo("resume-unchanged", &[("a.txt", "old\n")]);
    c.max_turns = 1;
    let cut = session(&engine(&["READ a.txt\n"]), dir.path(), &c);
    let out = resume(&engine(&["DONE\n"]), dir.path(), &c, &cut.session);
    assert_eq!((out.reason, out.no_change), (StopReason::MaxTurns, 1));
    let out = resume(&engine(&[EDIT_A]), dir.path(), &c, &cut.session);
    assert_eq!(out.no_change, 1);
    let out = resume(&engine(&["DONE now\n"]), dir.path(), &c, &cut.session);
    assert_eq!((out.reason, out.no_change), (StopReason::Done, 1));
}

// ---------------------------------------------------------------------------------------
// The start context.

const STATS: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(xs):\n    return sorted(xs)[len(xs) // 2]\n";

fn task_message(dir: &Path, task: &str, budget: usize) -> String {
    agent::prompt::task_message(&Workspace::new(dir).unwrap(), task, budget)
}

#[test]
fn a_task_naming_a_file_gets_its_numbered_contents_and_a_map() {
    let dir = repo(
        "named",
        &[("stats.py", STATS), ("other.py", "print('x')\n")],
    );
    std::fs::write(dir.path().join("data.bin"), [0xff, 0xfe]).unwrap();
    let task = "mean in stats.py fails on an empty list.";
    let e = engine(&["LIST\n"]);
    let mut c = cfg(task);
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    let first = first_message(&e);
    assert!(first.starts_with(&format!("Task: {task}\n\nRepository files (3):\n")));
    assert!(
        first.contains("stats.py (6 lines): def mean, def median\n"),
        "{first}"
    );
    assert!(first.contains("data.bin (2 bytes)\n"), "{first}");
    assert!(
        first.contains(
            "File stats.py (6 lines, named in the task):\n  1| def mean(xs):\n  2|     return \
             sum(xs) / len(xs)\n  3|\n"
        ),
        "{first}"
    );
    assert!(!first.contains("File other.py"));
    // The journal keeps it as shown, for resume.
    let journaled = events(dir.path(), &out.session)
        .into_iter()
        .find_map(|e| match e {
            Event::Start { task_message, .. } => task_message,
            _ => None,
        });
    assert_eq!(journaled.as_deref(), Some(first.as_str()));
}

#[test]
fn an_identifier_from_the_task_finds_the_file_defining_it_first() {
    let dir = repo(
        "ident",
        &[
            (
                "app/main.py",
                "from app.util import parse_header\n\nparse_header(open('f').read())\nparse_header('')\n",
            ),
            (
                "app/util.py",
                "import re\n\n\ndef parse_header(text):\n    return text.split(',')[:-1]\n",
            ),
            ("app/other.py", "def unrelated():\n    pass\n"),
            ("README.md", "parse header things\n"),
        ],
    );
    let m = task_message(dir.path(), "parse_header drops the last field", 6000);
    let util = m
        .find("File app/util.py (5 lines, defines parse_header):")
        .unwrap();
    let main = m
        .find("File app/main.py (4 lines, uses identifiers from the task):")
        .unwrap();
    assert!(util < main, "{m}");
    assert!(
        !m.contains("File app/other.py") && !m.contains("File README.md"),
        "{m}"
    );
    // Backticked words and CamelCase count as identifiers; plain words do not.
    let dir = repo(
        "ident2",
        &[
            ("shop.py", "class PriceList:\n    pass\n"),
            ("calc.py", "def total(xs):\n    return sum(xs)\n"),
        ],
    );
    let m = task_message(dir.path(), "the PriceList should use `total`", 6000);
    assert!(
        m.contains("File shop.py (2 lines, defines PriceList)"),
        "{m}"
    );
    assert!(m.contains("File calc.py (2 lines, defines total)"), "{m}");
    let m = task_message(dir.path(), "the total should be right", 6000);
    assert!(!m.contains("File calc.py"), "{m}");
}

#[test]
fn the_start_context_keeps_within_its_budget_and_is_deterministic() {
    let mut files: Vec<(String, String)> = (0..60)
        .map(|i| {
            (
                format!("pkg/mod_{i:02}.py"),
                format!("def helper_{i}():\n    return {i}\n"),
            )
        })
        .collect();
    files.push(("pkg/big.py".to_owned(), {
        let mut s = lines(400);
        s.push_str("def load_config(path):\n    return path\n");
        s
    }));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = repo("budget", &refs);
    let task = "load_config in pkg/big.py ignores the path";
    let head = format!("Task: {task}\n\n");
    for budget in [200, 800, 2000, 6000] {
        let m = task_message(dir.path(), task, budget);
        assert!(
            m.len() - head.len() <= budget,
            "{budget}: {} chars\n{m}",
            m.len()
        );
        assert_eq!(m, task_message(dir.path(), task, budget), "deterministic");
    }
    // Too long to show whole: the lines around the definition, and where the rest is.
    let m = task_message(dir.path(), task, 2000);
    assert!(m.contains("File pkg/big.py (lines "), "{m}");
    assert!(m.contains("401| def load_config(path):"), "{m}");
    assert!(
        m.contains("… and ") && m.contains("more (use GLOB or LIST)"),
        "{m}"
    );
    // A tight context window shrinks the start context below the configured budget.
    let e = engine(&["LIST\n"]).with_ctx(1024);
    let mut c = cfg(task);
    c.max_turns = 1;
    c.context_budget = Some(100_000);
    session(&e, dir.path(), &c);
    let first = first_message(&e);
    assert!(
        first.len() - head.len() <= (1024 - 200) * 3 / 2,
        "{}",
        first.len()
    );
}

#[test]
fn a_named_test_brings_the_modules_it_imports_two_deep() {
    let dir = repo(
        "imports",
        &[
            (
                "test_inventory.py",
                "from inventory import order_total\n\nassert order_total([(2, 50)], 10) == 90\n",
            ),
            (
                "inventory.py",
                "from pricing import discounted\n\n\ndef order_total(items, percent=0):\n    return 0\n",
            ),
            (
                "pricing.py",
                "import rounding\n\ndef discounted(price, percent):\n    return price * (100 + percent) / 100\n",
            ),
            ("rounding.py", "def cents(x):\n    return round(x, 2)\n"),
            ("unrelated.py", "x = 1\n"),
        ],
    );
    let m = task_message(
        dir.path(),
        "python3 test_inventory.py fails. Fix the bug.",
        6000,
    );
    let order: Vec<usize> = [
        "File test_inventory.py (3 lines, named in the task)",
        "File inventory.py (5 lines, imported by test_inventory.py)",
        "File pricing.py (4 lines, imported by inventory.py)",
    ]
    .iter()
    .map(|h| m.find(h).unwrap_or_else(|| panic!("{h} missing:\n{m}")))
    .collect();
    assert!(order.is_sorted(), "{m}");
    // Three hops is one too many; an unrelated file is not shown.
    assert!(
        !m.contains("File rounding.py") && !m.contains("File unrelated.py"),
        "{m}"
    );
}

#[test]
fn a_named_script_brings_the_files_it_sources() {
    let dir = repo(
        "sources",
        &[
            (
                "backup.sh",
                "#!/bin/sh\n. \"$(dirname \"$0\")/lib/paths.sh\"\nsource ./log.sh # logging\ncopy_all \"$1\"\n",
            ),
            ("lib/paths.sh", "copy_all() {\n  cp -r $1 /tmp/b\n}\n"),
            ("log.sh", "log() { echo \"$*\" >&2; }\n"),
            ("unrelated.sh", "echo hi\n"),
            ("notes.txt", "x\n"),
        ],
    );
    let m = task_message(
        dir.path(),
        "`sh backup.sh my notes` copies nothing when the name has a space. Fix it.",
        6000,
    );
    let order: Vec<usize> = [
        "File backup.sh (4 lines, named in the task)",
        "File lib/paths.sh (3 lines, sourced by backup.sh)",
        "File log.sh (1 lines, sourced by backup.sh)",
    ]
    .iter()
    .map(|h| m.find(h).unwrap_or_else(|| panic!("{h} missing:\n{m}")))
    .collect();
    assert!(order.is_sorted(), "{m}");
    assert!(!m.contains("File unrelated.sh"), "{m}");
}

#[test]
fn a_reply_that_repeats_a_block_is_cut_counted_and_told() {
    let dir = repo(
        "repeat",
        &[("calc.py", "def add(a, b):\n    return a - b\n")],
    );
    let block = "    return a + b\n    # fixed the sign\n";
    let looping = format!("The fix:\n{}", block.repeat(40));
    let e = engine(&[&looping]);
    let mut c = cfg("Fix add in calc.py");
    c.max_turns = 2;
    let out = session(&e, dir.path(), &c);
    let journal = events(dir.path(), &out.session);
    let raw = journal
        .iter()
        .find_map(|ev| match ev {
            Event::Reply { turn: 1, raw, .. } => Some(raw.clone()),
            _ => None,
        })
        .unwrap();
    // Halted at the third copy, not after forty.
    assert!(raw.len() < looping.len() / 4, "{} bytes kept", raw.len());
    assert!(raw.ends_with(&block.repeat(3)), "{raw:?}");
    let cut: Vec<_> = journal
        .iter()
        .filter(|ev| matches!(ev, Event::Malformed { kind, .. } if kind == "repetition"))
        .collect();
    assert_eq!(cut.len(), 1, "{journal:?}");
    // The next prompt tells the model why.
    let p = prompts(&e);
    assert!(p[1].contains("repeated the same lines"), "{}", p[1]);
}

#[test]
fn an_action_repeated_with_the_same_result_is_told_what_moves_on() {
    let dir = repo(
        "repeat-hint",
        &[("calc.py", "def add(a, b):\n    return a - b\n")],
    );
    let e = engine(&["READ calc.py\n", "READ calc.py\n", "READ calc.py\n"]);
    let out = session(&e, dir.path(), &cfg("Fix add in calc.py"));
    // Still a loop after three (the hint is not part of what makes two results the same).
    assert_eq!(out.reason, StopReason::Loop);
    let hints: Vec<Option<String>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|ev| match ev {
            Event::Observation { hint, .. } => Some(hint),
            _ => None,
        })
        .collect();
    assert_eq!(hints.len(), 3, "{hints:?}");
    assert_eq!(hints[0], None);
    for h in &hints[1..] {
        let h = h.as_deref().unwrap_or_default();
        assert!(
            h.contains("repeating it changes nothing") && h.contains("EDIT"),
            "{h}"
        );
    }
    let p = prompts(&e);
    assert!(p[2].contains("repeating it changes nothing"), "{}", p[2]);
}
