//! DONE held to what the task ties to its files ([`agent::targets`]): a quoted value it gives
//! a file, a file it names to change, a script it names that must go on printing. Each
//! refusal is fed back (the files stay as the model left them, nothing reverted or guessed)
//! and the DONE after the right change is taken.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{Config, StopReason};
use common::{
    engine, have_python, prompts, python_block, refusals, repo, session, session_approving,
};

fn cfg(task: &str) -> Config {
    let mut c = common::whole_cfg(task);
    c.max_turns = 6;
    c
}

fn read(dir: &std::path::Path, p: &str) -> String {
    std::fs::read_to_string(dir.join(p)).unwrap()
}

const MONEY: &str = "def format_price(x):\n    return f\"{x:.2f}\"\n";
const MONEY_NEW: &str =
    "def format_price(x, currency=\"USD\"):\n    return f\"{x:.2f} {currency}\"\n";
const INVOICE: &str = "from money import format_price\nprint(format_price(3))\n";
const INVOICE_NEW: &str = "from money import format_price\nprint(format_price(3, \"EUR\"))\n";

/// The 0.5B on add-param-callers: money.py changed, invoice.py not, DONE. Refused with the
/// call that should pass the value (`value_not_passed` comes first: the 1.5B, told only that
/// invoice.py lacked "EUR", gave a function of its own an "EUR" default and left the call
/// bare); taken once invoice.py passes it. A file that does not call the function yet is told
/// the value it lacks (`literal_missing`).
#[test]
fn done_waits_for_the_value_the_task_gives_a_file() {
    let dir = repo(
        "targets-literal",
        &[("money.py", MONEY), ("invoice.py", INVOICE)],
    );
    let first = format!("{}DONE", python_block("money.py", MONEY_NEW));
    let second = format!("{}DONE", python_block("invoice.py", INVOICE_NEW));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "Add a parameter currency to format_price in money.py, defaulting to \"USD\". \
                Then make invoice.py pass \"EUR\".";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["value_not_passed"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "the task says invoice.py passes \"EUR\" to format_price, and invoice.py calls \
             `format_price(3)` without it"
        ),
        "{told}"
    );
    // The refused DONE reverted nothing: money.py as the first reply wrote it.
    assert_eq!(read(dir.path(), "money.py"), MONEY_NEW);
    assert_eq!(read(dir.path(), "invoice.py"), INVOICE_NEW);

    let no_call = "print(3)\n";
    let dir = repo(
        "targets-literal-nocall",
        &[("money.py", MONEY), ("invoice.py", no_call)],
    );
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["literal_missing"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains("the task gives invoice.py \"EUR\", and invoice.py does not have it"),
        "{told}"
    );
}

/// The 1.5B on add-param-callers: invoice.py holds "EUR", but only in its demo, through a
/// parameter of its own that `format_price` receives unnamed. Refused (`value_not_passed`,
/// the call shown), the files left as written; the DONE after that parameter defaults to "EUR"
/// is taken.
#[test]
fn done_waits_for_the_value_a_file_passes_to_the_function() {
    let dir = repo(
        "targets-passed",
        &[("money.py", MONEY), ("invoice.py", INVOICE)],
    );
    let own = "from money import format_price\n\n\ndef line(x, currency=\"USD\"):\n    return format_price(x, currency)\n\n\nprint(line(3, currency=\"EUR\"))\n";
    // Its own parameter defaulting to "EUR": every call of format_price gets "EUR".
    let fixed = "from money import format_price\n\n\ndef line(x, currency=\"EUR\"):\n    return format_price(x, currency)\n\n\nprint(line(3))\n";
    let first = format!(
        "{}{}DONE",
        python_block("money.py", MONEY_NEW),
        python_block("invoice.py", own)
    );
    let second = format!("{}DONE", python_block("invoice.py", fixed));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "Add a parameter currency to format_price in money.py, defaulting to \"USD\". \
                Then make invoice.py pass \"EUR\".";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["value_not_passed"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "the task says invoice.py passes \"EUR\" to format_price, and invoice.py calls \
             `format_price(x, currency)` without it"
        ),
        "{told}"
    );
    assert_eq!(read(dir.path(), "money.py"), MONEY_NEW);
    assert_eq!(read(dir.path(), "invoice.py"), fixed);
}

/// The 0.5B on remove-debug-print: a new files.txt written, app.py left as it was, DONE.
/// Refused (`named_unchanged`); the DONE after app.py changes is taken.
#[test]
fn done_waits_while_the_file_the_task_names_is_untouched() {
    let app = "x = 2\nprint(\"DEBUG x =\", x)\nprint(x * 3)\n";
    let fixed = "x = 2\nprint(x * 3)\n";
    let dir = repo("targets-named", &[("app.py", app)]);
    let first = "files.txt\n```\napp.py\n```\nDONE";
    let second = format!("{}DONE", python_block("app.py", fixed));
    let e = engine(&[first, second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Remove the debug print line from app.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["named_unchanged"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains("the task names app.py, which you left as it was; you changed files.txt"),
        "{told}"
    );
    assert_eq!(read(dir.path(), "app.py"), fixed);

    // Changing the named file at once is no refusal.
    let dir = repo("targets-named-ok", &[("app.py", app)]);
    let e = engine(&[second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Remove the debug print line from app.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

/// The 0.5B on extract-constant: a blank line taken out of client.py (the file the task
/// names), then a new README.md describing the change it had not made, then DONE. The named
/// file's whitespace is no change of it: refused (`named_unchanged`); the real change is taken.
#[test]
fn done_waits_while_the_named_file_changed_only_in_whitespace() {
    let client = "def fetch(s):\n    return s.get(timeout=30)\n\n\ndef ping(s):\n    return s.get(timeout=30)\n";
    let squeezed = "def fetch(s):\n    return s.get(timeout=30)\n\ndef ping(s):\n    return s.get(timeout=30)\n";
    let fixed = "TIMEOUT = 30\n\n\ndef fetch(s):\n    return s.get(timeout=TIMEOUT)\n\n\ndef ping(s):\n    return s.get(timeout=TIMEOUT)\n";
    let dir = repo("targets-named-blank", &[("client.py", client)]);
    let first = format!(
        "{}README.md\n```\nclient.py uses the constant TIMEOUT.\n```\nDONE",
        python_block("client.py", squeezed)
    );
    let second = format!("{}DONE", python_block("client.py", fixed));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "The timeout 30 is repeated in every function of client.py. Extract it into one \
                module-level constant, TIMEOUT = 30, and use that constant everywhere.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["named_unchanged"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains("the task names client.py, which you left as it was; you changed README.md"),
        "{told}"
    );
    assert_eq!(read(dir.path(), "client.py"), fixed);
}

const TEXTSTATS: &str =
    "def words(t):\n    return len(t.split())\n\nprint(\"words:\", words(\"a b c\"))\n";
const REPORT: &str = "import textstats\nprint(\"report:\", textstats.words(\"x y\"))\n";

/// The 0.5B on main-guard: the demo deleted instead of guarded; `python3 textstats.py` printed
/// a line before and nothing now. Refused (`output_lost`), and the guarded demo is taken.
#[test]
fn done_waits_while_a_script_the_task_names_has_gone_quiet() {
    if !have_python() {
        return;
    }
    let dir = repo(
        "targets-quiet",
        &[("textstats.py", TEXTSTATS), ("report.py", REPORT)],
    );
    let deleted = "def words(t):\n    return len(t.split())\n";
    let guarded = "def words(t):\n    return len(t.split())\n\nif __name__ == \"__main__\":\n    print(\"words:\", words(\"a b c\"))\n";
    let first = format!("{}DONE", python_block("textstats.py", deleted));
    let second = format!("{}DONE", python_block("textstats.py", guarded));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "`python3 report.py` prints a stray line (\"words: 3\") before its own output, \
                because importing textstats.py runs its demo. Make the demo run only when \
                textstats.py is run directly.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["output_lost"]);
    let p = prompts(&e);
    // The script run alone is shown before the first turn, and told after the change.
    assert!(p[0].contains("python3 textstats.py"), "{}", p[0]);
    assert!(
        p[1].contains(
            "`python3 textstats.py` printed something before your change and prints nothing now"
        ),
        "{}",
        p[1]
    );
    assert_eq!(read(dir.path(), "textstats.py"), guarded);
}

/// The 1.5B on orders-newest-first: report.py written back without the line that runs it,
/// so `python3 report.py`, which the task says should list in another order, printed
/// nothing; the DONE was taken. A command of the task's own that printed before may not go
/// quiet unless the task's words let it (`output_lost`); a task that asks it to print
/// nothing takes the silent fix.
#[test]
fn a_command_the_task_names_may_not_go_quiet() {
    if !have_python() {
        return;
    }
    let report = "ORDERS = [3, 1, 2]\n\n\ndef main():\n    for o in sorted(ORDERS):\n        print(o)\n\n\nmain()\n";
    let quiet = "ORDERS = [3, 1, 2]\n\n\ndef main():\n    for o in sorted(ORDERS, reverse=True):\n        print(o)\n";
    let right = report.replace("sorted(ORDERS)", "sorted(ORDERS, reverse=True)");
    let dir = repo("targets-own-quiet", &[("report.py", report)]);
    let first = format!("{}DONE", python_block("report.py", quiet));
    let second = format!("{}DONE", python_block("report.py", &right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "`python3 report.py` should list the orders newest first, but it puts 1 above 3.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["output_lost"]);
    assert!(
        prompts(&e)[1].contains(
            "`python3 report.py` printed something before your change and prints nothing now"
        ),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(read(dir.path(), "report.py"), right);

    // Asked to print nothing: the quiet script is the fix.
    let dir = repo("targets-own-nothing", &[("report.py", report)]);
    let e = engine(&[first.as_str()]);
    let task = "`python3 report.py` should print nothing when it is run.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

/// The 0.5B on remove-debug-print: the debug print gone, and the call that printed the
/// result with it. `python3 app.py` printed two lines and prints none: refused
/// (`output_lost`); the fix that keeps the result is taken.
#[test]
fn a_removal_may_not_take_all_of_a_scripts_output() {
    if !have_python() {
        return;
    }
    let app = "def run():\n    value = 6 * 7\n    print(\"debug: value =\", value)\n    return value\n\n\nprint(run())\n";
    let too_much = "def run():\n    value = 6 * 7\n    return value\n";
    let right = "def run():\n    value = 6 * 7\n    return value\n\n\nprint(run())\n";
    let dir = repo("targets-removal", &[("app.py", app)]);
    let first = format!("{}DONE", python_block("app.py", too_much));
    let second = format!("{}DONE", python_block("app.py", right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Remove the debug print line from app.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["output_lost"]);
    assert_eq!(read(dir.path(), "app.py"), right);
}

/// The 0.5B on move-file: the copy written, the original deleted, then a comment written over
/// the copy. A file the session created may not lose its definitions, whatever the task's
/// words ("move" lets code go from the files that were there): refused, the copy kept.
#[test]
fn a_file_the_session_created_keeps_its_definitions() {
    let helpers = "def helper():\n    return 42\n";
    let dir = repo(
        "targets-move",
        &[("helpers.py", helpers), ("main.py", "print('main')\n")],
    );
    let first = format!("lib/helpers.py\n```python\n{helpers}```\nDELETE helpers.py");
    let second = "lib/helpers.py\n```python\n# Move helpers.py into lib/\n```\nDONE";
    let e = engine(&[first.as_str(), second, "DONE"]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Move helpers.py into a new directory lib/ (as lib/helpers.py)."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["dropped_code"]);
    assert_eq!(read(dir.path(), "lib/helpers.py"), helpers);
    assert!(!dir.path().join("helpers.py").exists());
}

/// The 0.5B on write-unit-test: a TestCase without `unittest.main()`, so the check
/// `python3 test_slug.py` ran no test and passed. Refused (`tests_not_run`) before the check
/// could take it; the file that runs its tests is verified.
#[test]
fn a_test_script_that_runs_no_tests_is_no_check() {
    if !have_python() {
        return;
    }
    let idle = "import unittest\nfrom slug import slugify\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(slugify(\"A b\"), \"a-b\")\n";
    let runs = format!("{idle}\n\nif __name__ == \"__main__\":\n    unittest.main()\n");
    unit_test_refused_then_verified(
        "targets-idle-test",
        idle,
        &runs,
        "tests_not_run",
        "test_slug.py defines tests, and `python3 test_slug.py` runs none",
    );
}

/// write-unit-test's session: test_slug.py written as `first` and refused as `refusal` (the
/// next prompt tells `told`), then as `second`, which the check verifies and which is kept.
fn unit_test_refused_then_verified(
    name: &str,
    first: &str,
    second: &str,
    refusal: &str,
    told: &str,
) {
    let slug = "def slugify(t):\n    return '-'.join(t.lower().split())\n";
    let dir = repo(name, &[("slug.py", slug)]);
    let first = format!("{}DONE", python_block("test_slug.py", first));
    let second_reply = format!("{}DONE", python_block("test_slug.py", second));
    let e = engine(&[first.as_str(), second_reply.as_str()]);
    let mut c = cfg(
        "Write a unit test file test_slug.py for slugify in slug.py, runnable with \
                     python3 test_slug.py.",
    );
    c.verify = Some(vec!["python3".into(), "test_slug.py".into()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(refusals(dir.path(), &out.session), [refusal]);
    assert!(prompts(&e)[1].contains(told), "{}", prompts(&e)[1]);
    assert_eq!(read(dir.path(), "test_slug.py"), second);
}

/// The 0.5B on write-unit-test: test_slug.py written as a copy of slug.py, so the check
/// `python3 test_slug.py` passed with nothing tested. Refused (`checks_nothing`), the file
/// left as written; the test that asserts is verified.
#[test]
fn a_test_script_in_which_nothing_can_fail_is_no_check() {
    if !have_python() {
        return;
    }
    let slug = "def slugify(t):\n    return '-'.join(t.lower().split())\n";
    let asserts = "from slug import slugify\n\nassert slugify(\"A b\") == \"a-b\"\nprint(\"ok\")\n";
    unit_test_refused_then_verified(
        "targets-copy-test",
        slug,
        asserts,
        "checks_nothing",
        "nothing in test_slug.py can fail (no assert, no raise)",
    );
}

/// The 0.5B on fix-typo: a blank line added to README.md, then DONE — taken by the vote.
/// Refused (`whitespace_only`); the DONE after the word is fixed is taken.
#[test]
fn a_change_of_whitespace_alone_is_no_fix() {
    let readme = "# mailer\n\nThe mailer will recieve messages.\n";
    let blank = "# mailer\n\nThe mailer will recieve messages.\n\n";
    let fixed = "# mailer\n\nThe mailer will receive messages.\n";
    let dir = repo("targets-blank", &[("README.md", readme)]);
    let first = format!("README.md\n```\n{blank}```\nDONE");
    let second = format!("README.md\n```\n{fixed}```\nDONE");
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Fix the spelling mistake in README.md."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["whitespace_only"]);
    assert_eq!(read(dir.path(), "README.md"), fixed);

    // A task about blank lines may change them alone.
    let dir = repo("targets-blank-asked", &[("README.md", readme)]);
    let e = engine(&[first.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Add a blank line at the end of README.md."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

/// The 1.5B on fix-typo: the heading capitalised (`# mailer` to `# Mailer`), the misspelled
/// word left, DONE. Refused (`case_only`); the DONE after the word is fixed is taken. A task
/// that asks for capitals may change case alone, and a spelling fix that also capitalises is
/// a fix.
#[test]
fn a_change_of_letter_case_alone_is_no_spelling_fix() {
    let readme = "# mailer\n\nThe mailer will recieve messages.\n";
    let capital = "# Mailer\n\nThe mailer will recieve messages.\n";
    let fixed = "# Mailer\n\nThe mailer will receive messages.\n";
    let dir = repo("targets-case", &[("README.md", readme)]);
    let first = format!("README.md\n```\n{capital}```\nDONE");
    let second = format!("README.md\n```\n{fixed}```\nDONE");
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(&e, dir.path(), &cfg("Fix the typo in README.md."));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["case_only"]);
    assert_eq!(read(dir.path(), "README.md"), fixed);

    let dir = repo("targets-case-asked", &[("README.md", readme)]);
    let e = engine(&[first.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Fix the spelling of the heading in README.md: a name starts with a capital."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

/// The 0.5B on remove-debug-print: app.py rewritten around the debug print (a name changed),
/// the print kept, DONE. Refused (`removal_left`, the line shown), app.py left as written;
/// the DONE once the line is gone is taken.
#[test]
fn done_waits_while_the_line_the_task_removes_is_there() {
    let app = "def run():\n    value = 6 * 7\n    print(\"debug: value =\", value)\n    return value\n\n\nprint(run())\n";
    let renamed = "def run():\n    result = 6 * 7\n    print(\"debug: result =\", result)\n    return result\n\n\nprint(run())\n";
    let fixed = "def run():\n    result = 6 * 7\n    return result\n\n\nprint(run())\n";
    let dir = repo("targets-removal", &[("app.py", app)]);
    let first = format!("{}DONE", python_block("app.py", renamed));
    let second = format!("{}DONE", python_block("app.py", fixed));
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Remove the debug print line from app.py."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["removal_left"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "the task says to remove the debug print line from app.py, and app.py still has `print(\"debug: result =\", result)`"
        ),
        "{told}"
    );
    assert_eq!(read(dir.path(), "app.py"), fixed);
}

/// The 0.5B on update-readme-usage: README.md rewritten with an option resize.py does not
/// have, DONE. Refused (`usage_mismatch`, the option named); then one real option left out,
/// refused again; the DONE once README.md names exactly resize.py's options is taken.
#[test]
fn done_waits_until_the_document_names_the_programs_options() {
    let resize = "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"image\")\nparser.add_argument(\"--width\", type=int, required=True)\nparser.add_argument(\"--keep-aspect\", action=\"store_true\")\n";
    let old = "# resize\n\n    python3 resize.py -w 800 photo.jpg\n";
    let dir = repo(
        "targets-usage",
        &[("README.md", old), ("resize.py", resize)],
    );
    let replies = [
        "README.md\n```\n# resize\n\n    python3 resize.py --width 800 --scale 50 photo.jpg\n```\nDONE",
        "README.md\n```\n# resize\n\n    python3 resize.py --width 800 photo.jpg\n```\nDONE",
        "README.md\n```\n# resize\n\n    python3 resize.py --width 800 --keep-aspect photo.jpg\n```\nDONE",
    ];
    let e = engine(&replies);
    let task = "README.md shows options that no longer exist. Update README.md to match the \
                options resize.py accepts.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["usage_mismatch", "usage_mismatch"]
    );
    let p = prompts(&e);
    assert!(
        p[1].contains("README.md names --scale, which resize.py does not have"),
        "{}",
        p[1]
    );
    assert!(
        p[2].contains("resize.py has --keep-aspect, which README.md does not name"),
        "{}",
        p[2]
    );
    assert_eq!(
        read(dir.path(), "README.md"),
        "# resize\n\n    python3 resize.py --width 800 --keep-aspect photo.jpg\n"
    );
    assert_eq!(read(dir.path(), "resize.py"), resize);
}

/// The 1.5B on latest-release-sh: asked why `sh latest.sh` misses v1.10.0, it changed a tag in
/// tags.txt (the input latest.sh reads) and said DONE. Refused (`input_edited`, the reader
/// named), the files left as written; once the tag is back and the sort is fixed, the DONE is
/// taken.
#[test]
fn a_symptom_fixed_in_the_programs_input_is_refused() {
    const LATEST: &str =
        "file=${1:-tags.txt}\necho \"latest release: $(sort \"$file\" | tail -n 1)\"\n";
    const FIXED: &str =
        "file=${1:-tags.txt}\necho \"latest release: $(sort -V \"$file\" | tail -n 1)\"\n";
    const TAGS: &str = "v1.9.0\nv1.10.0\nv1.9.2\n";
    let dir = repo(
        "targets-input",
        &[("latest.sh", LATEST), ("tags.txt", TAGS)],
    );
    let first = "tags.txt\n```\nv1.9.0\nv1.10.0\nv1.9.3\n```\nDONE";
    let second = format!("tags.txt\n```\n{TAGS}```\nlatest.sh\n```sh\n{FIXED}```\nDONE");
    let e = engine(&[first, second.as_str()]);
    let task = "`sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is newer.";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["input_edited"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains("you changed only tags.txt, the input that latest.sh reads"),
        "{told}"
    );
    assert_eq!(read(dir.path(), "tags.txt"), TAGS);
    assert_eq!(read(dir.path(), "latest.sh"), FIXED);
}

/// The 1.5B on rename-config-key: the key renamed in config.json and config.py, DONE with
/// client.py still reading the old one (session 20), then told the file and line
/// (`name_left`) and writing the same lines back until its turns ran out (sessions 23–25).
/// The agent finishes the rename it began — the key where it stands as a name, the printed
/// word `timeout` kept — as one commit shown with its diff; the DONE after it is taken. One
/// undo step takes the agent's commit back.
#[test]
fn a_rename_left_in_one_file_is_finished_by_the_agent() {
    const CLIENT: &str = "def url(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
    let dir = repo(
        "targets-rename-key",
        &[
            ("config.json", "{\"timeout\": 5}\n"),
            ("config.py", "DEFAULTS = {\"timeout\": 10}\n"),
            ("client.py", CLIENT),
        ],
    );
    let first = "config.json\n```\n{\"timeout_seconds\": 5}\n```\nconfig.py\n```python\nDEFAULTS = {\"timeout_seconds\": 10}\n```\nDONE";
    let e = engine(&[first, "DONE"]);
    let task =
        "Rename the setting `timeout` to `timeout_seconds` everywhere (config.json and the code).";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["rename_finished"]);
    let fixed = CLIENT.replace("['timeout']", "['timeout_seconds']");
    assert_eq!(read(dir.path(), "client.py"), fixed);
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "DONE held: the task renames timeout to timeout_seconds, and the agent finished the \
             rename — timeout still stood as a name in client.py line 2: renamed to \
             timeout_seconds there"
        ),
        "{told}"
    );
    assert!(
        told.contains("+    return f\"(timeout {cfg['timeout_seconds']} s)\""),
        "{told}"
    );
    let ws = agent::Workspace::new(dir.path()).unwrap();
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["client.py"]);
    assert_eq!(read(dir.path(), "client.py"), CLIENT);
}

/// Turns run out with the check passing and the rename begun: the DONE judged then finds
/// the rename left in client.py, the agent finishes it, and the session is judged again on
/// the files so — verified, the key renamed where it stands and nowhere else.
#[test]
fn a_rename_begun_when_the_turns_run_out_is_finished_and_judged_again() {
    if !have_python() {
        return;
    }
    const CLIENT: &str = "def url(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
    let dir = repo(
        "targets-rename-ran-out",
        &[
            ("config.py", "DEFAULTS = {\"timeout\": 10}\n"),
            ("client.py", CLIENT),
            (
                "check_config.py",
                "assert 'timeout_seconds' in open('config.py').read()\n",
            ),
        ],
    );
    let first = "config.py\n```python\nDEFAULTS = {\"timeout_seconds\": 10}\n```\n";
    let e = engine(&[first]);
    let mut c = cfg("Rename the setting `timeout` to `timeout_seconds` everywhere.");
    c.max_turns = 1;
    c.verify = Some(vec!["python3".to_owned(), "check_config.py".to_owned()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(refusals(dir.path(), &out.session), ["rename_finished"]);
    assert_eq!(
        read(dir.path(), "client.py"),
        CLIENT.replace("['timeout']", "['timeout_seconds']")
    );
}

/// rename-module: the module moved on disk (`MOVE`), its three importers left as they were —
/// the test the check runs among them. The agent writes their imports for the new module
/// (the test's change is to its imports only, which a check file allows), shows it, and the
/// DONE after it is verified.
#[test]
fn a_module_moved_with_its_importers_left_has_them_finished_by_the_agent() {
    if !have_python() {
        return;
    }
    const REPORT: &str =
        "import strutil\n\n\ndef heading(text):\n    return strutil.title_case(text)\n";
    let dir = repo(
        "targets-move-module",
        &[
            (
                "strutil.py",
                "def title_case(t):\n    return t.title()\n\n\ndef slugify(t):\n    return t.lower()\n",
            ),
            ("report.py", REPORT),
            (
                "app.py",
                "from strutil import slugify\n\nprint(slugify('A'))\n",
            ),
            (
                "test_strutil.py",
                "from strutil import slugify, title_case\n\nassert slugify('A') == 'a'\nassert title_case('a b') == 'A B'\nprint('ok')\n",
            ),
        ],
    );
    let e = engine(&["MOVE strutil.py -> text_utils.py\nDONE", "DONE"]);
    let mut c =
        cfg("Rename the module strutil.py to text_utils.py and update everything that imports it.");
    c.verify = Some(vec!["python3".to_owned(), "test_strutil.py".to_owned()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(refusals(dir.path(), &out.session), ["rename_finished"]);
    assert_eq!(
        read(dir.path(), "report.py"),
        REPORT.replace("strutil", "text_utils")
    );
    assert!(read(dir.path(), "app.py").starts_with("from text_utils import slugify\n"));
    assert!(read(dir.path(), "test_strutil.py").starts_with("from text_utils import"));
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "DONE held: the task moves strutil.py to text_utils.py, and imports of the old \
             module were left: the agent wrote them for the new one in app.py line 1, \
             report.py lines 1, 5, test_strutil.py line 1"
        ),
        "{told}"
    );
}

/// A rename whose finish would change a file the check runs (not only its imports): the
/// agent changes nothing — the check's files stay as they were — and the DONE is refused as
/// before (`name_left`), the files as the model left them.
#[test]
fn a_rename_that_would_reach_the_checks_file_is_not_finished() {
    if !have_python() {
        return;
    }
    const CLIENT: &str = "def url(cfg):\n    return cfg['timeout']\n";
    let check = "import client\nassert client.url({'timeout': 5}) == 5\n";
    let dir = repo(
        "targets-rename-check-file",
        &[
            ("config.py", "DEFAULTS = {\"timeout\": 10}\n"),
            ("client.py", CLIENT),
            ("check_client.py", check),
        ],
    );
    let first = "config.py\n```python\nDEFAULTS = {\"timeout_seconds\": 10}\n```\nDONE";
    let e = engine(&[first, "DONE"]);
    let mut c = cfg("Rename the setting `timeout` to `timeout_seconds` everywhere.");
    c.max_turns = 2;
    c.verify = Some(vec!["python3".to_owned(), "check_client.py".to_owned()]);
    let out = session(&e, dir.path(), &c);
    assert_ne!(out.reason, StopReason::Verified);
    let refused = refusals(dir.path(), &out.session);
    assert!(
        !refused.iter().any(|r| r == "rename_finished"),
        "{refused:?}"
    );
    assert_eq!(
        refused.first().map(String::as_str),
        Some("name_left"),
        "{refused:?}"
    );
    assert_eq!(read(dir.path(), "client.py"), CLIENT);
    assert_eq!(read(dir.path(), "check_client.py"), check);
}

/// Where writing a file asks the user first (`--approval ask`), the agent changes nothing
/// itself: the DONE is refused as before (`name_left`, file and line named), and taken once
/// the model's own block renames the key.
#[test]
fn a_rename_left_where_writes_are_asked_is_refused_not_finished() {
    const CLIENT: &str = "def url(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
    let dir = repo(
        "targets-rename-key-ask",
        &[
            ("config.py", "DEFAULTS = {\"timeout\": 10}\n"),
            ("client.py", CLIENT),
        ],
    );
    let first = "config.py\n```python\nDEFAULTS = {\"timeout_seconds\": 10}\n```\nDONE";
    let fixed = CLIENT.replace("['timeout']", "['timeout_seconds']");
    let second = format!("{}DONE", python_block("client.py", &fixed));
    let e = engine(&[first, second.as_str()]);
    let mut c = cfg("Rename the setting `timeout` to `timeout_seconds` everywhere.");
    c.policy = agent::Policy::new(agent::ApprovalMode::Ask);
    let out = session_approving(&e, dir.path(), &c, 2);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["name_left"]);
    assert!(
        prompts(&e)[1].contains(
            "the task renames timeout to timeout_seconds, and client.py still uses timeout (line 2"
        ),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(read(dir.path(), "client.py"), fixed);
}

/// The 1.5B on rename-config-key (session 20): the key renamed everywhere and also the word
/// of `(timeout 5 s)` that client.py prints. The agent puts the word back, the name left
/// renamed, and says so; the DONE after it is taken.
#[test]
fn a_rename_that_reaches_the_printed_words_is_put_right_by_the_agent() {
    const CLIENT: &str = "def url(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
    let dir = repo(
        "targets-rename-prose-finished",
        &[
            ("config.py", "DEFAULTS = {\"timeout\": 10}\n"),
            ("client.py", CLIENT),
        ],
    );
    let over = CLIENT.replace("timeout", "timeout_seconds");
    let config = "config.py\n```python\nDEFAULTS = {\"timeout_seconds\": 10}\n```\n";
    let first = format!("{config}{}DONE", python_block("client.py", &over));
    let e = engine(&[first.as_str(), "DONE"]);
    let out = session(
        &e,
        dir.path(),
        &cfg("Rename the setting `timeout` to `timeout_seconds` everywhere."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["rename_finished"]);
    assert_eq!(
        read(dir.path(), "client.py"),
        CLIENT.replace("['timeout']", "['timeout_seconds']")
    );
    assert!(
        prompts(&e)[1].contains(
            "your rename had reached the word timeout in text the program prints (client.py \
             line 2): put back, the name kept renamed"
        ),
        "{}",
        prompts(&e)[1]
    );
}

/// The rename-config-key session both tests below play, where writes are asked (so the agent
/// does not put the word back itself): the key renamed everywhere and also the word of
/// `(timeout 5 s)` that client.py prints, then only the name. Checks that the first DONE is
/// refused (`name_in_prose`, nothing undone) and the second taken; returns what the model
/// was told after the first reply, and client.py as it should be.
fn rename_in_prose(name: &str, restate: bool) -> (String, String) {
    const CLIENT: &str = "def url(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
    let dir = repo(
        name,
        &[
            ("config.py", "DEFAULTS = {\"timeout\": 10}\n"),
            ("client.py", CLIENT),
        ],
    );
    let over = CLIENT.replace("timeout", "timeout_seconds");
    let right = CLIENT.replace("['timeout']", "['timeout_seconds']");
    let config = "config.py\n```python\nDEFAULTS = {\"timeout_seconds\": 10}\n```\n";
    let first = format!("{config}{}DONE", python_block("client.py", &over));
    let second = format!("{}DONE", python_block("client.py", &right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let mut c = cfg("Rename the setting `timeout` to `timeout_seconds` everywhere.");
    c.restate = restate;
    c.policy = agent::Policy::new(agent::ApprovalMode::Ask);
    let out = session_approving(&e, dir.path(), &c, 3);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["name_in_prose"]);
    assert_eq!(read(dir.path(), "client.py"), right);
    (prompts(&e)[1].clone(), right)
}

/// The 1.5B on rename-config-key (session 20): the key renamed everywhere, and also the word
/// of `(timeout 5 s)` that client.py prints; its check passed. Where writes are asked:
/// refused (`name_in_prose`, line named and given as it should read, nothing undone); taken
/// once only the name is renamed.
#[test]
fn a_rename_that_reaches_the_printed_words_is_refused_where_writes_are_asked() {
    let (told, right) = rename_in_prose("targets-rename-prose", false);
    assert!(
        told.contains("you also renamed the word timeout in text client.py prints, on line 2;"),
        "{told}"
    );
    // The line to write is given whole: the word kept, the name renamed.
    assert!(
        told.contains("line 2 reads `return f\"(timeout {cfg['timeout_seconds']} s)\"`"),
        "{told}"
    );
    // And the file so, to copy: the 1.5B wrote back the file as the message showed it.
    assert!(
        told.contains(&format!(
            "client.py with line 2 so:\nclient.py\n```\n{right}```"
        )),
        "{told}"
    );
    // The only client.py to copy: neither the model's own first block (which the 1.5B wrote
    // back each turn) nor the file as it was is shown above it any more.
    assert!(
        !told.contains("def url(cfg):\n    return f\"(timeout_seconds"),
        "{told}"
    );
    assert!(
        !told.contains("def url(cfg):\n    return f\"(timeout {cfg['timeout']}"),
        "{told}"
    );
    assert_eq!(told.matches(&right).count(), 1, "{told}");
    // Left out, with no line standing in for it (one the model would copy as a reply).
    assert!(!told.contains("client.py:"), "{told}");
    assert!(told.contains("config.py\n```"), "{told}");
}

/// As above with the first message restated each turn (the coder models' profiles): the
/// file with the line as it should read reaches the model whole, its fence not inside another
/// (session 23's run: fenced again, it was not copied).
#[test]
fn a_restated_refusal_shows_the_file_to_write_whole() {
    let (told, right) = rename_in_prose("targets-rename-prose-restated", true);
    assert!(
        told.contains(&format!(
            "client.py with line 2 so:\nclient.py\n```\n{right}```"
        )),
        "{told}"
    );
    assert!(!told.contains("```\nclient.py with line 2 so:"), "{told}");
    // And only so: the files above show client.py no more as it is now (the 1.5B copied that
    // one), and nothing stands in for it.
    let now = "def url(cfg):\n    return f\"(timeout_seconds {cfg['timeout_seconds']} s)\"\n";
    assert!(!told.contains(now), "{told}");
    assert_eq!(told.matches(&right).count(), 1, "{told}");
    assert!(!told.contains("client.py:"), "{told}");
}

/// The 1.5B on clean-dry-run-sh: asked for a -n option, it changed what clean.sh prints and
/// never parsed -n (its `[ -n "$f" ]` is a test, not the option). Refused (`name_missing`,
/// told where options are read); taken once getopts reads n.
#[test]
fn a_one_letter_option_never_parsed_is_refused() {
    const CLEAN: &str = "while getopts v opt; do\n  case $opt in\n    v) V=1 ;;\n  esac\ndone\nfor f in *.o; do [ -n \"$f\" ] && rm -f \"$f\"; done\necho removed\n";
    let dir = repo("targets-short-option", &[("clean.sh", CLEAN)]);
    let wrong = CLEAN.replace("echo removed", "echo would remove");
    let right = CLEAN
        .replace("getopts v opt", "getopts vn opt")
        .replace("    v) V=1 ;;\n", "    v) V=1 ;;\n    n) DRY=1 ;;\n");
    let told = dry_run_option(dir.path(), &wrong, &right);
    assert!(
        told.contains("add the option -n, and no file you changed reads it from the command line"),
        "{told}"
    );
}

/// A session asked for clean.sh's -n that writes clean.sh as `first`, then as `right`: the
/// first DONE refused (`name_missing`), the second taken. What the model was told after the
/// first reply.
fn dry_run_option(dir: &std::path::Path, first: &str, right: &str) -> String {
    let first = format!("clean.sh\n```sh\n{first}```\nDONE");
    let second = format!("clean.sh\n```sh\n{right}```\nDONE");
    let e = engine(&[first.as_str(), second.as_str()]);
    let out = session(
        &e,
        dir,
        &cfg("Add a -n option to clean.sh for a dry run: delete nothing."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir, &out.session), ["name_missing"]);
    assert_eq!(read(dir, "clean.sh"), right);
    prompts(&e)[1].clone()
}

/// The 1.5B on clean-dry-run-sh (session 21): `while getopts v n opt` — `n` the variable,
/// `opt` an argument — and, told only that nothing read -n, DONE three times. The refusal
/// names the line and gives it with the letter among the others.
#[test]
fn a_getopts_line_without_the_letter_is_told_as_it_should_read() {
    const CLEAN: &str =
        "while getopts v opt; do\n  case $opt in\n    v) V=1 ;;\n  esac\ndone\necho removed\n";
    let dir = repo("targets-getopts-split", &[("clean.sh", CLEAN)]);
    let split = CLEAN
        .replace("getopts v opt", "getopts v n opt")
        .replace("    v) V=1 ;;\n", "    v) V=1 ;;\n    n) DRY=1 ;;\n");
    let right = split.replace("getopts v n opt", "getopts vn opt");
    let told = dry_run_option(dir.path(), &split, &right);
    assert!(
        told.contains("clean.sh line 1 `while getopts v n opt; do` gives getopts its option letters in one word, without n; with it, the line reads `while getopts vn opt; do`"),
        "{told}"
    );
    assert!(
        told.contains(&format!(
            "clean.sh with line 1 so:\nclean.sh\n```\n{right}```"
        )),
        "{told}"
    );
}

/// The 1.5B on book-year-field: the field added to the class and the loader, the check (a
/// test of the old behaviour) passing, and the listing never showing a year; the DONE was
/// taken. The task shows the output by example and calls the program "the listing":
/// listing.py runs alone, and DONE waits until it prints the example (`example_missing`).
#[test]
fn done_waits_until_the_program_the_task_names_prints_its_example() {
    if !have_python() {
        return;
    }
    let books = "title,author,year\nDune,Frank Herbert,1965\n";
    let listing = "import csv\n\nfor row in csv.DictReader(open(\"books.csv\")):\n    print(f\"{row['title']} by {row['author']}\")\n";
    let commented = format!("# the listing\n{listing}");
    let right = listing.replace("{row['title']} by", "{row['title']} ({row['year']}) by");
    let dir = repo(
        "targets-example",
        &[("books.csv", books), ("listing.py", listing)],
    );
    let first = format!("{}DONE", python_block("listing.py", &commented));
    let second = format!("{}DONE", python_block("listing.py", &right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task =
        "Show the year in the listing after the title, like \"Dune (1965) by Frank Herbert\".";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["example_missing"]);
    assert!(
        prompts(&e)[1].contains("the task shows the output as \"Dune (1965) by Frank Herbert\""),
        "{}",
        prompts(&e)[1]
    );
    assert!(
        prompts(&e)[1].contains("Dune by Frank Herbert"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(read(dir.path(), "listing.py"), right);
}

/// The 0.5B on book-year-field (session 23): it wrote books.csv with Dune's year 1965 as 0,
/// the check passed, and the example's words were no longer all in the repository, so it
/// looked like an illustration and the DONE was taken. What the data held before the session
/// still promises the example.
#[test]
fn an_example_stays_promised_when_the_session_takes_its_words_out_of_the_data() {
    if !have_python() {
        return;
    }
    let books = "title,author,year\nDune,Frank Herbert,1965\n";
    let listing = "import csv\n\nfor row in csv.DictReader(open(\"books.csv\")):\n    print(f\"{row['title']} by {row['author']}\")\n";
    let right = listing.replace("{row['title']} by", "{row['title']} ({row['year']}) by");
    let dir = repo(
        "targets-example-data",
        &[("books.csv", books), ("listing.py", listing)],
    );
    let blanked = books.replace("1965", "0");
    let first = format!("books.csv\n```\n{blanked}```\nDONE");
    let second = format!(
        "books.csv\n```\n{books}```\n{}DONE",
        python_block("listing.py", &right)
    );
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "Read the year from books.csv and show it in the listing after the title, like \"Dune (1965) by Frank Herbert\".";
    let out = session(&e, dir.path(), &cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["example_missing"]);
    assert_eq!(read(dir.path(), "listing.py"), right);
}

/// The 1.5B on main-guard: told nothing of the idiom, it wrote the files back or deleted the
/// demo. The first message now names the lines textstats.py runs on import and the
/// `__main__` block; the guarded file is taken, and the demo still runs directly.
#[test]
fn the_first_message_names_what_an_imported_file_runs() {
    if !have_python() {
        return;
    }
    let stats = "import sys\n\n\ndef count(text):\n    return len(text.split())\n\n\ntext = \" \".join(sys.argv[1:]) or \"a b\"\nprint(\"words:\", count(text))\n";
    let guarded = "import sys\n\n\ndef count(text):\n    return len(text.split())\n\n\nif __name__ == \"__main__\":\n    text = \" \".join(sys.argv[1:]) or \"a b\"\n    print(\"words:\", count(text))\n";
    let report = "from stats import count\n\nprint(\"total:\", count(\"x y z\"))\n";
    let dir = repo(
        "targets-onimport",
        &[("stats.py", stats), ("report.py", report)],
    );
    let reply = format!("{}DONE", python_block("stats.py", guarded));
    let e = engine(&[reply.as_str()]);
    let task = "`python3 report.py` prints a stray \"words: ...\" line because importing stats.py runs its demo. Make the demo run only when stats.py is run directly.";
    let out = session(&e, dir.path(), &cfg(task));
    let first = &prompts(&e)[0];
    assert!(
        first.contains(
            "stats.py runs these top-level lines every time it is imported (`import stats`)"
        ) && first.contains("   8  text = ")
            && first.contains("under `if __name__ == \"__main__\":`"),
        "{first}"
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
    assert_eq!(read(dir.path(), "stats.py"), guarded);
}

/// The first message of a task that adds an option to a shell script reading none shows
/// the shape and the line; one about spaces lists the unquoted expansions.
#[test]
fn the_first_message_shows_shell_idioms_where_the_task_needs_them() {
    let todo = "#!/bin/sh\nfile=$1\ngrep -n TODO \"$file\"\n";
    let count = "#!/bin/sh\nfor f in $@; do\n  wc -l < \"$f\"\ndone\n";
    let dir = repo(
        "targets-shell-notes",
        &[("todo.sh", todo), ("count.sh", count)],
    );
    let e = engine(&["DONE"]);
    session(
        &e,
        dir.path(),
        &cfg("Add a -c option to todo.sh that prints the count."),
    );
    let first = &prompts(&e)[0];
    assert!(
        first.contains("todo.sh reads no options yet") && first.contains("first read on line 2"),
        "{first}"
    );
    assert!(!first.contains("expands these"), "{first}");
    let e = engine(&["DONE"]);
    session(
        &e,
        dir.path(),
        &cfg("count.sh fails on file names with spaces."),
    );
    let first = &prompts(&e)[0];
    assert!(
        first.contains("count.sh expands these outside double quotes")
            && first.contains("line 2 `for f in $@; do`: $@"),
        "{first}"
    );
    assert!(!first.contains("reads no options yet"), "{first}");
}
