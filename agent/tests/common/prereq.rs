//! Prerequisites a test needs from the machine (`python3`, `bash`, Landlock), and the one way
//! a test that lacks one says so: never a silent pass.
//!
//! A test asks `if !prereq::python3() { return; }`. When the prerequisite is there the call
//! returns `true` and the test runs. When it is missing:
//! - with `BELLOWS_NO_SKIP=1` (what `.ci/run` sets) the call panics, naming the test and what
//!   was missing, so CI fails instead of reporting a test that tested nothing;
//! - otherwise it prints `SKIPPED <test>: <what> missing` on stderr, appends the same line to
//!   the file `$BELLOWS_SKIP_LOG` names (`scripts/test.sh` sets it and prints the count at the
//!   end, since cargo hides a passing test's output), and returns `false`.
//!
//! `BELLOWS_TEST_NO_LANDLOCK=1` makes [`landlock`] report the kernel's Landlock absent, here
//! only (bellows itself never reads it): the way to see the policy work on a machine that has
//! everything (`BELLOWS_TEST_NO_LANDLOCK=1 BELLOWS_NO_SKIP=1 scripts/test.sh` fails, naming
//! each test that needs Landlock).
//!
//! One file, included by path where a crate's tests need it (`agent/tests/common/mod.rs`, the
//! agent's unit tests through `agent/src/testing.rs`, the cli's tests), so no crate exists
//! for it and no test binary depends on another.

#![allow(dead_code)] // Each test binary uses its own share of these.

use std::io::Write;

/// Turns a missing prerequisite into a failure (set by `.ci/run`).
pub const NO_SKIP: &str = "BELLOWS_NO_SKIP";
/// The file each skip is appended to, one line per skip (set by `scripts/test.sh`).
pub const SKIP_LOG: &str = "BELLOWS_SKIP_LOG";
/// Reports Landlock absent to the tests (the test-only switch).
pub const NO_LANDLOCK: &str = "BELLOWS_TEST_NO_LANDLOCK";
/// What a skip line starts with.
pub const MARKER: &str = "SKIPPED";

fn env_is_one(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v == "1")
}

/// The running test's name: libtest names each test's thread after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("a test")
        .to_owned()
}

/// `true` when `present`; otherwise the skip policy above for the prerequisite `what`, called
/// from the test at the caller's location.
#[track_caller]
pub fn unless_missing(present: bool, what: &str) -> bool {
    if present {
        return true;
    }
    let at = std::panic::Location::caller();
    let line = format!(
        "{MARKER} {} ({}:{}): {what} missing",
        test_name(),
        at.file(),
        at.line()
    );
    if env_is_one(NO_SKIP) {
        panic!("{line}; {NO_SKIP}=1 makes a missing prerequisite a failure");
    }
    eprintln!("{line}");
    if let Some(log) = std::env::var_os(SKIP_LOG).filter(|l| !l.is_empty()) {
        // One write of one line, appended: tests running at once do not interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
    false
}

/// Whether `program` runs here (`program --version` exits 0).
pub fn runs(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `python3` is installed.
#[track_caller]
pub fn python3() -> bool {
    unless_missing(runs("python3"), "python3")
}

/// `bash` is installed.
#[track_caller]
pub fn bash() -> bool {
    unless_missing(runs("bash"), "bash")
}

/// The kernel confines commands with Landlock (`kernel`: what `agent::sandbox` found), unless
/// the test-only switch says it does not.
#[track_caller]
pub fn landlock(kernel: bool) -> bool {
    let switched_off = env_is_one(NO_LANDLOCK);
    let what = if switched_off {
        format!("Landlock ({NO_LANDLOCK}=1)")
    } else {
        "Landlock (this kernel cannot confine commands, so RUN runs nothing)".to_owned()
    };
    unless_missing(kernel && !switched_off, &what)
}
