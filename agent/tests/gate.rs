//! The general DONE gate: properties any task states, checked at DONE whatever its words —
//! a command it says fails now succeeds, the files it gives stay as they were, the files it
//! names as the places of its change are changed, tests it asks for are added — before the
//! rules that read one kind of task's wording. Each rule is refused and then taken after the
//! right change; a refusal reverts nothing.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{Config, StopReason};
use common::{engine, prompts, python_block, python_runs_confined, refusals, repo, session};

fn cfg(task: &str) -> Config {
    let mut c = common::whole_cfg(task);
    c.max_turns = 6;
    c
}

fn read(dir: &std::path::Path, p: &str) -> String {
    std::fs::read_to_string(dir.join(p)).unwrap()
}

const REPORT: &str = "import csv\nimport sys\n\n\ndef total(path):\n    with open(path) as f:\n        return sum(int(r[\"amount\"]) for r in csv.DictReader(f))\n\n\nprint(total(sys.argv[1]))\n";
const REPORT_FIXED: &str = "import csv\nimport sys\n\n\ndef total(path):\n    with open(path) as f:\n        return sum(int(r[\"amount\"] or 0) for r in csv.DictReader(f))\n\n\nprint(total(sys.argv[1]))\n";
const SALES: &str = "name,amount\ntea,3\ncake,\njam,4\n";
const SALES_EDITED: &str = "name,amount\ntea,3\ncake,0\njam,4\n";

const GIVEN_TASK: &str = "`python3 report.py sales.csv` crashes with a ValueError, but \
                          sales.csv is a normal export: an empty amount means nothing was sold.";

/// The model "fixes" the data and says DONE; then writes the data back, fixes the code and
/// says DONE again.
fn given_replies() -> models::ScriptedEngine {
    let first = format!("{}DONE", python_block("sales.csv", SALES_EDITED));
    let second = format!(
        "{}{}DONE",
        python_block("sales.csv", SALES),
        python_block("report.py", REPORT_FIXED)
    );
    engine(&[first.as_str(), second.as_str()])
}

/// A command's input that the task calls normal: the model "fixes" the data, and the DONE
/// is refused (`given_changed`, the file as it was shown); the model then writes the data
/// back and fixes the code, and the DONE is taken.
#[test]
fn the_input_of_a_failing_command_stays_as_it_was() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("gate-given", &[("report.py", REPORT), ("sales.csv", SALES)]);
    let e = given_replies();
    let out = session(&e, dir.path(), &cfg(GIVEN_TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["given_changed"]);
    let told = &prompts(&e)[1];
    assert!(told.contains("the task gives sales.csv as it is"), "{told}");
    assert_eq!(read(dir.path(), "sales.csv"), SALES);
    assert_eq!(read(dir.path(), "report.py"), REPORT_FIXED);
}

const PARSE: &str = "import sys\n\n\ndef seconds(text):\n    return int(text.rstrip(\"m\")) * 60\n\n\nprint(seconds(sys.argv[1]))\n";
const PARSE_EXIT: &str = "import sys\n\n\ndef seconds(text):\n    if not text.endswith(\"m\"):\n        print(\"unknown unit\")\n        sys.exit(1)\n    return int(text[:-1]) * 60\n\n\nprint(seconds(sys.argv[1]))\n";
const PARSE_FIXED: &str = "import sys\n\n\ndef seconds(text):\n    unit = {\"s\": 1, \"m\": 60, \"h\": 3600}[text[-1]]\n    return int(text[:-1]) * unit\n\n\nprint(seconds(sys.argv[1]))\n";

/// A command the task says fails must end with status 0 once done: a change that trades
/// the traceback for `exit 1` is refused (`still_failing`, "it still fails (exit 1)"); the
/// real fix is taken.
#[test]
fn a_command_the_task_says_fails_must_succeed() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("gate-fails", &[("timer.py", PARSE)]);
    let first = format!("{}DONE", python_block("timer.py", PARSE_EXIT));
    let second = format!("{}DONE", python_block("timer.py", PARSE_FIXED));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "`python3 timer.py 90s` fails: seconds are not understood.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["still_failing"]);
    let told = &prompts(&e)[1];
    assert!(told.contains("it still fails (exit 1)"), "{told}");
    assert_eq!(read(dir.path(), "timer.py"), PARSE_FIXED);
}

/// Where the task lets the command end in an error (`should print a clear error and exit
/// 1`), that ending is the fix: taken at once.
#[test]
fn a_failure_the_task_asks_for_is_not_refused() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("gate-error-ok", &[("timer.py", PARSE)]);
    let first = format!("{}DONE", python_block("timer.py", PARSE_EXIT));
    let e = engine(&[first.as_str()]);
    let task = "`python3 timer.py 90s` crashes with a traceback. It should print a clear error \
                and exit 1 for any unit but m.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

const HELLO: &str =
    "def greeting(name):\n    return f\"Hello, {name}\"\n\n\nprint(greeting(\"Ann\"))\n";
const HELLO_README: &str = "# hello\n\n`python3 hello.py` prints `Hello, Ann`.\n";

/// Every file the task names as a place of the change is changed: the README it names by
/// role, left while the code changed, is refused (`named_left`); the DONE after it is taken.
#[test]
fn every_file_the_task_names_for_the_change_is_changed() {
    let dir = repo(
        "gate-named",
        &[("hello.py", HELLO), ("README.md", HELLO_README)],
    );
    let first = format!(
        "{}DONE",
        python_block("hello.py", &HELLO.replace("Hello,", "Hi,"))
    );
    let second = format!(
        "{}DONE",
        python_block("README.md", &HELLO_README.replace("Hello,", "Hi,"))
    );
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "Make the greeting in hello.py say Hi instead of Hello, and update the README.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["named_left"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains("the task asks for a change in README.md"),
        "{told}"
    );
    assert!(read(dir.path(), "README.md").contains("Hi, Ann"));
}

const LIMIT: &str = "def clamp(n, hi):\n    return min(n, hi)\n";
const TEST_LIMIT: &str = "from limit import clamp\n\nassert clamp(5, 3) == 3\n";

/// A task that asks for tests gets more test cases: an assertion widened is refused
/// (`tests_not_added`); a test added is taken.
#[test]
fn a_task_asking_for_tests_gets_new_tests() {
    let dir = repo(
        "gate-tests",
        &[("limit.py", LIMIT), ("test_limit.py", TEST_LIMIT)],
    );
    let widened = "from limit import clamp\n\nassert clamp(5, 3) == 3 or clamp(5, 3) == 5\n";
    let added = "from limit import clamp\n\nassert clamp(5, 3) == 3\nassert clamp(2, 3) == 2\nassert clamp(3, 3) == 3\n";
    let first = format!("{}DONE", python_block("test_limit.py", widened));
    let second = format!("{}DONE", python_block("test_limit.py", added));
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Add tests to test_limit.py that cover values below and at the limit."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["tests_not_added"]);
    assert_eq!(read(dir.path(), "test_limit.py"), added);
}

const MONEY: &str = "def format_price(x):\n    return f\"{x:.2f}\"\n";
const MONEY_NEW: &str =
    "def format_price(x, currency=\"USD\"):\n    return f\"{x:.2f} {currency}\"\n";
const INVOICE: &str = "from money import format_price\nprint(format_price(3))\n";
const TEST_MONEY: &str =
    "from money import format_price\n\nassert format_price(3, \"EUR\") == \"3.00 EUR\"\n";

/// A rule that reads one kind of task's wording (`value_not_passed`, `literal_missing`: a
/// quoted value the task gives a file) runs once the general rules passed, and a passing
/// check does not silence it: the check here covers money.py alone, and invoice.py was left.
#[test]
fn a_wording_rule_still_refuses_where_the_check_is_weaker_than_the_task() {
    if !python_runs_confined() {
        return;
    }
    let task = "Add a parameter currency to format_price in money.py, defaulting to \"USD\". \
                Then make invoice.py pass \"EUR\".";
    let files = [
        ("money.py", MONEY),
        ("invoice.py", INVOICE),
        ("test_money.py", TEST_MONEY),
    ];
    let reply = format!("{}DONE", python_block("money.py", MONEY_NEW));
    for check in [true, false] {
        let dir = repo(&format!("gate-lesser-{check}"), &files);
        let e = engine(&[reply.as_str()]);
        let mut c = cfg(task);
        if check {
            c.verify = Some(vec!["python3".to_owned(), "test_money.py".to_owned()]);
        }
        let out = session(&e, dir.path(), &c);
        assert!(
            !matches!(out.reason, StopReason::Done | StopReason::Verified),
            "{:?}",
            out.reason
        );
        let refused = refusals(dir.path(), &out.session);
        assert!(
            refused
                .iter()
                .any(|r| r == "value_not_passed" || r == "literal_missing"),
            "{refused:?}"
        );
    }
}

/// `Config::wording_rules` off (`--no-wording-rules`): a DONE a rule reading the task's
/// wording would refuse (`removal_left`: the line the task says to remove is still there) is
/// taken at once, while a general rule (`given_changed`: the input the task calls normal was
/// edited) still refuses on the same configuration.
#[test]
fn without_the_wording_rules_only_the_general_gate_judges_done() {
    let app = "def run():\n    value = 6 * 7\n    print(\"debug: value =\", value)\n    return value\n\n\nprint(run())\n";
    let renamed = "def run():\n    result = 6 * 7\n    print(\"debug: result =\", result)\n    return result\n\n\nprint(run())\n";
    let dir = repo("gate-no-wording", &[("app.py", app)]);
    let first = format!("{}DONE", python_block("app.py", renamed));
    let e = engine(&[first.as_str()]);
    let mut c = cfg("Remove the debug print line from app.py.");
    c.wording_rules = false;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
    assert_eq!(read(dir.path(), "app.py"), renamed);

    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "gate-no-wording-given",
        &[("report.py", REPORT), ("sales.csv", SALES)],
    );
    let e = given_replies();
    let mut c = cfg(GIVEN_TASK);
    c.wording_rules = false;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["given_changed"]);
    assert_eq!(read(dir.path(), "report.py"), REPORT_FIXED);
}
