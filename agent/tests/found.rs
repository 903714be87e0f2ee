//! The repository's own tests, found when the session has no check ([`agent::found`]): a
//! DONE is refused while a test that passed before fails, or one that failed before still
//! fails; the failing one is read-only; a resumed session holds to the tests found when it
//! first started; `found_tests = false` or a check of the user's own finds nothing.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::StopReason;
use common::{
    engine, prompts, python_block, python_runs_confined, refusals, repo, resume, session, whole_cfg,
};

const PRICE: &str = "def total(prices):\n    return sum(prices)\n";
const PRICE_BROKEN: &str = "def total(prices):\n    return sum(prices) + 1\n";
const PRICE_ROUNDED: &str = "def total(prices):\n    return round(sum(prices), 2)\n";
const TEST: &str = "from price import total\n\nassert total([1, 2]) == 3, total([1, 2])\nassert total([0.1, 0.2]) == 0.3, total([0.1, 0.2])\nprint(\"ok\")\n";
const TASK: &str = "Make total in price.py round its result to two decimals.";

/// A test that failed before: shown in the first message, its DONE refused while it still
/// fails (`still_failing`), its file read-only (`check_file`); the fix's DONE is taken.
#[test]
fn a_failing_test_of_the_repository_holds_done_back_and_stays_as_it_was() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "found-failing",
        &[("price.py", PRICE), ("test_price.py", TEST)],
    );
    let wrong = format!("{}DONE", python_block("price.py", PRICE_BROKEN));
    let cheat = format!("{}DONE", python_block("test_price.py", "print(\"ok\")\n"));
    let fixed = format!("{}DONE", python_block("price.py", PRICE_ROUNDED));
    let e = engine(&[wrong.as_str(), cheat.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["still_failing", "check_file", "still_failing"]
    );
    let p = prompts(&e);
    assert!(
        p[0].contains("Running `python3 test_price.py` on the files as they are now (exit 1)"),
        "{}",
        p[0]
    );
    assert!(
        p[1].contains("the repository's test failed before your change and still fails"),
        "{}",
        p[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("test_price.py")).unwrap(),
        TEST
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("price.py")).unwrap(),
        PRICE_ROUNDED
    );
}

const PASSING: &str =
    "from price import total\n\nassert total([1, 2]) == 3, total([1, 2])\nprint(\"ok\")\n";
const PRICE_MEAN: &str = "def total(prices):\n    return sum(prices)\n\n\ndef mean(prices):\n    return total(prices) / len(prices)\n";
const PRICE_MEAN_BROKEN: &str = "def total(prices):\n    return sum(prices) / len(prices)\n\n\ndef mean(prices):\n    return total(prices)\n";
const ADD: &str = "Add a function mean to price.py that returns the mean of prices.";

/// A test that passed before and fails after the change: told after the change, DONE refused
/// (`test_broken`) until the change stops breaking it. The test is not read-only.
#[test]
fn a_test_the_change_breaks_holds_done_back() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "found-broken",
        &[("price.py", PRICE), ("test_price.py", PASSING)],
    );
    let broken = format!("{}DONE", python_block("price.py", PRICE_MEAN_BROKEN));
    let fixed = format!("{}DONE", python_block("price.py", PRICE_MEAN));
    let e = engine(&[broken.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(ADD));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["test_broken"]);
    let p = prompts(&e);
    assert!(
        p[0].contains("Running `python3 test_price.py` on the files as they are now (exit 0)"),
        "{}",
        p[0]
    );
    assert!(
        p[1].contains(
            "DONE refused: `python3 test_price.py` passed before your change and fails now"
        ),
        "{}",
        p[1]
    );
    assert!(p[1].contains("AssertionError"), "{}", p[1]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("price.py")).unwrap(),
        PRICE_MEAN
    );
}

/// A resumed session holds to the test found when it first started, and to what it printed
/// then; a test the session wrote since is not one of them.
#[test]
fn a_resumed_session_holds_to_the_tests_found_at_its_start() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "found-resume",
        &[("price.py", PRICE), ("test_price.py", PASSING)],
    );
    let e = engine(&[python_block("price.py", PRICE_MEAN_BROKEN)]);
    let mut c = whole_cfg(ADD);
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    let own_test = python_block("test_mean.py", "assert False\n");
    let fixed = format!("{}DONE", python_block("price.py", PRICE_MEAN));
    let e2 = engine(&["DONE", own_test.as_str(), fixed.as_str()]);
    c.max_turns = 4;
    let out = resume(&e2, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &first.session), ["test_broken"]);
}

/// With the user's own check, or `found_tests = false`, no test is looked for: the broken
/// change's DONE is taken (the check here passes either way).
#[test]
fn a_check_or_the_switch_finds_no_tests() {
    if !python_runs_confined() {
        return;
    }
    for (name, verify, found, stop) in [
        (
            "found-check",
            Some(vec!["true".to_owned()]),
            true,
            StopReason::Verified,
        ),
        ("found-off", None, false, StopReason::Done),
    ] {
        let dir = repo(name, &[("price.py", PRICE), ("test_price.py", PASSING)]);
        let broken = format!("{}DONE", python_block("price.py", PRICE_MEAN_BROKEN));
        let e = engine(&[broken.as_str()]);
        let mut c = whole_cfg(ADD);
        c.verify = verify;
        c.found_tests = found;
        let out = session(&e, dir.path(), &c);
        assert_eq!(out.reason, stop, "{name}");
        assert!(!prompts(&e)[0].contains("Running `"), "{name}");
    }
}
