//! Syntax checks of what the agent writes: a written file that does not parse is told with
//! the change, and a DONE is refused while one stands — except for a file that did not parse
//! before the session, live and after a resume.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{ApprovalMode, Config, Policy, Protocol, StopReason};
use common::{engine, have_python, prompts, refusals, repo, resume, session};

const GOOD: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const BROKEN: &str = "def mean(xs:\n    return sum(xs) / len(xs)\n";

fn cfg() -> Config {
    let mut c = Config::new("fix mean", Policy::new(ApprovalMode::Auto));
    c.protocol = Protocol::Whole;
    c.max_turns = 4;
    c.reply_reserve = 400;
    c
}

fn block(text: &str) -> String {
    format!("stats.py\n```python\n{text}```\n")
}

/// The broken file is written (the model asked for it) and told at once with its line; the
/// DONE after it is refused as `lint`; the fix goes through and its DONE is accepted.
#[test]
fn a_file_that_does_not_parse_is_told_and_holds_back_done() {
    if !have_python() {
        return;
    }
    let dir = repo("lint-told", &[("stats.py", "x = 1\n")]);
    let broken = format!("{}DONE", block(BROKEN));
    let fixed = format!("{}DONE", block(GOOD));
    let e = engine(&[broken.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    assert_eq!(refusals(dir.path(), &out.session), ["lint"]);
    let p = &prompts(&e)[1];
    assert!(p.contains("stats.py does not parse: line 1"), "{p}");
    assert!(p.contains("DONE refused: stats.py does not parse"), "{p}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        GOOD
    );
}

/// Lint refusals and the files a session wrote come back with a resume: a DONE after the
/// resume is still refused while the file is broken.
#[test]
fn a_resumed_session_still_holds_back_done_on_a_broken_file() {
    if !have_python() {
        return;
    }
    let dir = repo("lint-resume", &[("stats.py", "x = 1\n")]);
    let e = engine(&[block(BROKEN)]);
    let mut c = cfg();
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    let fixed = format!("{}DONE", block(GOOD));
    let e2 = engine(&["DONE", fixed.as_str()]);
    c.max_turns = 3;
    let out = resume(&e2, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &first.session), ["lint"]);
}

/// A file that did not parse before the session is not held against the model (its check
/// would be about someone else's mistake), live and after a resume, which reads the file's
/// first content from the journal; `lint = false` checks nothing.
#[test]
fn a_file_broken_before_the_session_and_lint_off_hold_nothing_back() {
    if !have_python() {
        return;
    }
    let still_broken = "def mean(xs:\n    return sum(xs) / max(len(xs), 1)\n";
    let dir = repo("lint-exempt", &[("stats.py", BROKEN)]);
    let reply = format!("{}DONE", block(still_broken));
    let e = engine(&[reply.as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());

    let dir = repo("lint-exempt-resume", &[("stats.py", BROKEN)]);
    let e = engine(&[block(still_broken)]);
    let mut c = cfg();
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    let e2 = engine(&["DONE"]);
    let out = resume(&e2, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Done);

    let dir = repo("lint-off", &[("stats.py", "x = 1\n")]);
    let reply = format!("{}DONE", block(BROKEN));
    let e = engine(&[reply.as_str()]);
    let mut c = cfg();
    c.lint = false;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert!(!prompts(&e)[0].contains("does not parse"));
}

/// JSON is checked here, without a program: a config file with a trailing comma is told,
/// in the text protocol too.
#[test]
fn json_is_checked_in_every_protocol() {
    let dir = repo("lint-json", &[("README.md", "r\n")]);
    let create =
        "CREATE config.json\n<<<<<<< SEARCH\n=======\n{\"port\": 8080,}\n>>>>>>> REPLACE\nDONE";
    let fix =
        "CREATE config.json\n<<<<<<< SEARCH\n=======\n{\"port\": 8080}\n>>>>>>> REPLACE\nDONE";
    let e = engine(&[create, fix]);
    let mut c = cfg();
    c.protocol = Protocol::Text;
    c.actions_per_turn = 4;
    let out = session(&e, dir.path(), &c);
    assert_eq!(refusals(dir.path(), &out.session), ["lint"]);
    assert_eq!(out.reason, StopReason::Done);
}

/// The 1.5B on logview-since: `datetime.strptime` written into a new line of a file that never
/// imports datetime. The block is not written (`undefined_name`: the line and the name said,
/// and what import to add), so the DONE after it finds nothing changed; the file with the
/// import goes through.
#[test]
fn a_name_used_without_its_import_is_not_written() {
    if !have_python() {
        return;
    }
    const BEFORE: &str = "def since(s):\n    return s\n";
    let dir = repo("lint-unbound", &[("stats.py", BEFORE)]);
    let missing = "def since(s):\n    return datetime.strptime(s, \"%H:%M\")\n";
    let imported = format!(
        "import datetime\n\n\n{}",
        missing.replace("datetime.strptime", "datetime.datetime.strptime")
    );
    let e = engine(&[
        format!("{}DONE", block(missing)).as_str(),
        format!("{}DONE", block(&imported)).as_str(),
    ]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["undefined_name", "no_change"]
    );
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "stats.py not written: line 2 uses datetime, which stats.py never assigns, imports \
             or defines (a NameError when that line runs)"
        ),
        "{told}"
    );
    assert!(told.contains("dd the import that name needs"), "{told}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        imported
    );
}

/// The 1.5B on rename-module: report.py's `import strutil` became `import text_utils`, and
/// `strutil.title_case(text)` below it stayed as it was — a line the session did not write,
/// using a name its change unbound (the check, which imports only text_utils, passed). The
/// block is not written; the one where the line follows the import is.
#[test]
fn a_kept_line_using_an_import_the_change_took_out_is_not_written() {
    if !have_python() {
        return;
    }
    const REPORT: &str =
        "import strutil\n\n\ndef heading(text):\n    return strutil.title_case(text)\n";
    let dir = repo("lint-unbound-kept", &[("report.py", REPORT)]);
    let renamed = REPORT.replacen("import strutil", "import text_utils", 1);
    let fixed = renamed.replace("strutil.", "text_utils.");
    let block = |t: &str| format!("report.py\n```python\n{t}```\nDONE");
    let e = engine(&[block(&renamed).as_str(), block(&fixed).as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["undefined_name", "no_change"]
    );
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "report.py not written: line 5 uses strutil, which report.py never assigns, \
             imports or defines"
        ),
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("report.py")).unwrap(),
        fixed
    );
}

/// The 0.5B on rename-config-key: every rename right, but health.py's main block became
/// `cfg = config.load(path)` with `path` bound nowhere — it parses, and the task's check
/// never runs that block. Python's compiler finds the name; the block is not written
/// (`undefined_name`) with the line said, and the hint asks for a value, not an import.
/// The block as it was, renamed, goes through.
#[test]
fn a_plain_name_the_change_left_unbound_is_not_written() {
    if !have_python() {
        return;
    }
    const HEALTH: &str = "import sys\n\nimport config\n\n\ndef worst(cfg):\n    return 3 * cfg.get(\"timeout\", 10)\n\n\nif __name__ == \"__main__\":\n    cfg = config.load(*sys.argv[1:2])\n    print(worst(cfg))\n";
    let dir = repo("lint-unbound-value", &[("health.py", HEALTH)]);
    let renamed = HEALTH.replace("\"timeout\"", "\"timeout_seconds\"");
    let lost = renamed.replace("config.load(*sys.argv[1:2])", "config.load(path)");
    let block = |t: &str| format!("health.py\n```python\n{t}```\nDONE");
    let e = engine(&[block(&lost).as_str(), block(&renamed).as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["undefined_name", "no_change"]
    );
    let told = &prompts(&e)[1];
    assert!(
        told.contains(
            "health.py not written: line 11 uses path, which health.py never assigns, imports \
             or defines"
        ),
        "{told}"
    );
    assert!(told.contains("ive that name a value"), "{told}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("health.py")).unwrap(),
        renamed
    );
}
