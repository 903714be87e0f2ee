//! The journal as undo and resume read it: commits that are all or nothing (and what undo
//! does with one that failed), undo refusing tampered records with nothing written, the
//! latest-session pick, the one typed reader, and resume giving the prompt the uninterrupted
//! session sent.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use agent::act::{self, FileChange};
use agent::journal::{self, JournalError};
use agent::view::Quiet;
use agent::{ApprovalMode, Config, Event, Policy, ScriptedApprover, StopReason, Workspace};
use common::{engine, events, journal_path, repo, resume, rt, session};
use models::ScriptedEngine;

fn cfg() -> Config {
    let mut c = Config::new("fix the bug", Policy::new(ApprovalMode::Auto));
    c.max_turns = 8;
    c.reply_reserve = 200;
    c
}

/// Every prompt the engine saw, its messages joined, with the session id (which names
/// artifacts) replaced by a placeholder so that two sessions' prompts compare.
fn prompts(engine: &ScriptedEngine, session: &str) -> Vec<String> {
    common::prompts(engine)
        .into_iter()
        .map(|p| p.replace(session, "SESSION"))
        .collect()
}

/// Everything under `dir` (the journal included): path → (bytes, or `/` for a directory,
/// and mode bits). Equal snapshots mean nothing was written.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                out.insert(rel, (b"/".to_vec(), mode));
                stack.push(p);
            } else {
                out.insert(rel, (std::fs::read(&p).unwrap_or_default(), mode));
            }
        }
    }
    out
}

/// Rewrites the session's journal one JSON line at a time.
fn tamper(dir: &Path, session: &str, edit: impl Fn(&mut serde_json::Value)) {
    let path = journal_path(dir, session);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        edit(&mut v);
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
}

/// The 1-based line of the first event of kind `kind`.
fn line_of(dir: &Path, session: &str, kind: &str) -> usize {
    let text = std::fs::read_to_string(journal_path(dir, session)).unwrap();
    text.lines()
        .position(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"] == kind)
        .unwrap()
        + 1
}

const EDIT_A: &str = "EDIT a.txt\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";

fn text(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A file name whose temporary file (`.{name}.bellows-PID.tmp`) is longer than NAME_MAX, so
/// that writing it fails, for root too.
fn too_long() -> String {
    format!("{}.txt", "x".repeat(246))
}

// ---------------------------------------------------------------------------------------
// Resume is exact.

/// The scripted session the resume tests cut: reads, an edit, a MKDIR, a help line written
/// back (an echo the codec leaves as prose), a malformed command, a new file, and long
/// outputs under a small context, so that compaction happens more than once.
fn scripted_session() -> (Vec<(&'static str, String)>, Vec<String>, Config, u32) {
    let big: String = (0..120).map(|i| format!("w{i} ")).collect::<String>() + "\n";
    let files = vec![
        ("big.txt", big),
        ("a.txt", "keep\nold\n".to_owned()),
        ("b.txt", "bee\n".to_owned()),
    ];
    let help: String = codec::registry::BUILTINS
        .iter()
        .filter(|t| t.name == "read")
        .map(|t| format!("{}  {}\n", t.syntax, t.hint))
        .collect();
    let replies = vec![
        "READ big.txt\n".to_owned(),
        EDIT_A.to_owned(),
        "MKDIR out/logs\n".to_owned(),
        help,
        "MOVE a.txt\n".to_owned(),
        // A new file: the repository's file list (in the first message) changes.
        "CREATE notes.txt\n<<<<<<< SEARCH\n=======\nnote\n>>>>>>> REPLACE\n".to_owned(),
        "READ big.txt:1-1\n".to_owned(),
        "LIST\n".to_owned(),
        "READ a.txt\n".to_owned(),
        "READ big.txt\n".to_owned(),
    ];
    let mut c = cfg();
    c.reply_reserve = 100;
    c.stall_turns = 20;
    c.loop_repeats = 20;
    let turns = replies.len() as u32;
    c.max_turns = turns;
    (files, replies, c, turns)
}

#[test]
fn resume_after_any_turn_sends_the_prompt_the_uninterrupted_session_sent() {
    let (files, replies, c, turns) = scripted_session();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let n_ctx = 420;
    let whole_dir = repo("exact-whole", &files);
    let whole = engine(&replies).with_ctx(n_ctx);
    let out = session(&whole, whole_dir.path(), &c);
    assert_eq!((out.reason, out.turns), (StopReason::MaxTurns, turns));
    let live = prompts(&whole, &out.session);
    let j = events(whole_dir.path(), &out.session);
    // The session has what it should: a compaction (more than one), an echo refused as
    // prose and journaled as an observation, a malformed command, a MKDIR and an edit.
    let states: Vec<(usize, usize)> = j
        .iter()
        .filter_map(|e| match e {
            Event::Prompt {
                digested, dropped, ..
            } => Some((*digested, *dropped)),
            _ => None,
        })
        .collect();
    let compactions = states.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(compactions >= 2, "{states:?}");
    assert!(
        j.iter()
            .any(|e| matches!(e, Event::Observation { turn: 4, summary, .. }
            if summary.contains("example from the instructions"))),
        "the echo's observation is journaled"
    );
    assert!(
        j.iter()
            .any(|e| matches!(e, Event::Malformed { turn: 5, .. }))
    );
    assert!(j.iter().any(|e| matches!(e, Event::CommitDir { .. })));
    assert_eq!(out.echoes, 1);

    for cut in 1..turns {
        let dir = repo("exact", &files);
        let first = engine(&replies[..cut as usize]).with_ctx(n_ctx);
        let mut c1 = c.clone();
        c1.max_turns = cut;
        let head = session(&first, dir.path(), &c1);
        assert_eq!(head.turns, cut);
        let rest = engine(&replies[cut as usize..]).with_ctx(n_ctx);
        let mut c2 = c.clone();
        c2.max_turns = turns - cut;
        let tail = resume(&rest, dir.path(), &c2, &head.session);
        assert_eq!((tail.reason, tail.turns), (StopReason::MaxTurns, turns));
        assert_eq!(tail.echoes, out.echoes, "cut after turn {cut}");
        let resumed = prompts(&rest, &head.session);
        for (k, p) in resumed.iter().enumerate() {
            let turn = cut as usize + k;
            assert_eq!(
                p,
                &live[turn],
                "cut after turn {cut}: the prompt of turn {} differs",
                turn + 1
            );
        }
        assert_eq!(resumed.len(), (turns - cut) as usize);
        // The repository ends as the uninterrupted session left it.
        assert_eq!(text(dir.path(), "a.txt"), text(whole_dir.path(), "a.txt"));
        assert_eq!(text(dir.path(), "notes.txt"), "note\n");
    }
}

#[test]
fn resume_after_a_mkdir_only_commit_keeps_ids_monotonic_and_undo_exact() {
    let dir = repo("mkdir-ids", &[("a.txt", "old\n")]);
    let first = engine(&[EDIT_A.to_owned(), "MKDIR made\n".to_owned()]);
    let mut c = cfg();
    c.max_turns = 2;
    let cut = session(&first, dir.path(), &c);
    assert_eq!(cut.reason, StopReason::MaxTurns);
    let rest = engine(&[
        "EDIT a.txt\n<<<<<<< SEARCH\nnew\n=======\nnewer\n>>>>>>> REPLACE\n".to_owned(),
        "DONE\n".to_owned(),
    ]);
    let out = resume(&rest, dir.path(), &cfg(), &cut.session);
    assert_eq!(out.reason, StopReason::Done);
    let j = events(dir.path(), &cut.session);
    let files: Vec<u32> = j
        .iter()
        .filter_map(|e| match e {
            Event::Commit { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    let dirs: Vec<u32> = j
        .iter()
        .filter_map(|e| match e {
            Event::CommitDir { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    // The resumed edit is commit 3, not a second commit 2 merged with the MKDIR.
    assert_eq!((files, dirs), (vec![1, 3], vec![2]));
    let ws = Workspace::new(dir.path()).unwrap();
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["a.txt"]);
    assert_eq!(text(dir.path(), "a.txt"), "new\n");
    assert!(dir.path().join("made").is_dir());
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["made/"]);
    assert!(!dir.path().join("made").exists());
    assert_eq!(text(dir.path(), "a.txt"), "new\n");
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["a.txt"]);
    assert_eq!(text(dir.path(), "a.txt"), "old\n");
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
}

#[test]
fn a_resume_after_an_undo_numbers_its_commits_after_the_undone_ones() {
    let dir = repo("undo-ids", &[("a.txt", "old\n")]);
    let mut c = cfg();
    c.max_turns = 1;
    let cut = session(&engine(&[EDIT_A.to_owned()]), dir.path(), &c);
    // Undo writes its own record for commit 1; a failed commit 2 follows by hand (as a
    // journal of a crash would have it), so that only those two name the highest ids.
    let ws = Workspace::new(dir.path()).unwrap();
    agent::undo(&ws, None, 1, false).unwrap();
    let path = journal_path(dir.path(), &cut.session);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(r#"{"event":"commit_failed","id":2,"reason":"crash"}"#);
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let out = resume(
        &engine(&[EDIT_A.to_owned(), "DONE\n".to_owned()]),
        dir.path(),
        &cfg(),
        &cut.session,
    );
    assert_eq!(out.reason, StopReason::Done);
    let last = events(dir.path(), &cut.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Commit { id, .. } => Some(id),
            _ => None,
        })
        .max();
    assert_eq!(last, Some(3));
}

// ---------------------------------------------------------------------------------------
// All or nothing.

#[test]
fn a_move_whose_target_write_fails_keeps_its_source_and_undo_of_it_is_a_noop() {
    let dir = repo("move-fails", &[("a.txt", "precious\n")]);
    set_mode(&dir.path().join("a.txt"), 0o750);
    let target = format!("out/{}", too_long());
    let e = engine(&[
        format!("MOVE a.txt -> {target}\n"),
        "LIST\n".to_owned(),
        "DONE\n".to_owned(),
    ]);
    let out = session(&e, dir.path(), &cfg());
    // The rolled-back move changed nothing, so the DONE after it is refused (and the
    // session, with no other action left, stalls).
    assert_eq!((out.reason, out.no_change), (StopReason::Stall, 1));
    // The source is where it was, as it was; the directory made for the target is gone.
    assert_eq!(text(dir.path(), "a.txt"), "precious\n");
    assert_eq!(mode(&dir.path().join("a.txt")), 0o750);
    assert!(!dir.path().join("out").exists());
    let p = prompts(&e, &out.session);
    assert!(
        p[1].contains("nothing was changed (the commit was rolled back)"),
        "{}",
        p[1]
    );
    // The journal says so: the commit failed, what it touched, and that the rollback held.
    let failed: Vec<_> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::CommitFailed {
                id,
                touched,
                unrestored,
                rolled_back,
                ..
            } => Some((id, touched, unrestored, rolled_back)),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [(1, vec!["out/".to_owned(), target.clone()], vec![], true)]
    );
    // Undo has nothing to do and says so, writing nothing in the repository.
    let before = snapshot(dir.path());
    let ws = Workspace::new(dir.path()).unwrap();
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
    let after = snapshot(dir.path());
    let outside_state = |s: &BTreeMap<String, (Vec<u8>, u32)>| {
        s.iter()
            .filter(|(k, _)| !k.starts_with(".bellows"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(outside_state(&before), outside_state(&after));
    // Nor does a second undo find anything.
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
    assert_eq!(text(dir.path(), "a.txt"), "precious\n");
}

#[test]
fn a_move_writes_its_target_before_removing_its_source() {
    let dir = repo("move-order", &[("a.txt", "a\n")]);
    let ws = Workspace::new(dir.path()).unwrap();
    let plan = act::plan(
        &ws,
        &codec::Action::Move {
            from: "a.txt".to_owned(),
            to: "b.txt".to_owned(),
        },
    )
    .unwrap();
    let act::Plan::Change { changes, .. } = plan else {
        panic!("a move is a change")
    };
    let order: Vec<(&str, bool)> = changes
        .iter()
        .map(|c| (c.path.as_str(), c.post.is_some()))
        .collect();
    assert_eq!(order, [("b.txt", true), ("a.txt", false)]);
}

fn change(path: &str, pre: Option<&str>, post: Option<&str>, pre_mode: Option<u32>) -> FileChange {
    FileChange {
        path: path.to_owned(),
        pre: pre.map(|s| s.as_bytes().to_vec()),
        post: post.map(|s| s.as_bytes().to_vec()),
        pre_mode,
        post_mode: None,
    }
}

#[test]
fn a_multi_file_commit_that_fails_on_its_second_file_rolls_back_its_first() {
    let dir = repo("rollback", &[("a.txt", "old\n"), ("b.sh", "run\n")]);
    set_mode(&dir.path().join("a.txt"), 0o640);
    set_mode(&dir.path().join("b.sh"), 0o750);
    let ws = Workspace::new(dir.path()).unwrap();
    let long = too_long();
    // An edit, then a file that cannot be written.
    let changes = [
        change("a.txt", Some("old\n"), Some("new\n"), Some(0o640)),
        change(&long, None, Some("x\n"), None),
    ];
    let failure = act::commit(&ws, &changes, &[]).unwrap_err();
    assert_eq!(text(dir.path(), "a.txt"), "old\n");
    assert_eq!(mode(&dir.path().join("a.txt")), 0o640);
    assert_eq!(failure.touched, ["a.txt".to_owned(), long.clone()]);
    assert!(failure.unrestored.is_empty());
    assert!(failure.observation.summary.contains("rolled back"));

    // A delete and a new file in a new directory, then the failure: the deleted file comes
    // back with its mode, the new file and its directory go.
    let changes = [
        change("b.sh", Some("run\n"), None, Some(0o750)),
        change("new/c.txt", None, Some("c\n"), None),
        change(&format!("new/{long}"), None, Some("x\n"), None),
    ];
    let failure = act::commit(&ws, &changes, &["made/deep".to_owned()]).unwrap_err();
    assert_eq!(text(dir.path(), "b.sh"), "run\n");
    assert_eq!(mode(&dir.path().join("b.sh")), 0o750);
    assert!(!dir.path().join("new").exists() && !dir.path().join("made").exists());
    assert_eq!(
        failure.touched,
        [
            "made/",
            "made/deep/",
            "new/",
            "b.sh",
            "new/c.txt",
            &format!("new/{long}")
        ]
    );
    assert!(failure.unrestored.is_empty());

    // A file changed since the preview refuses the commit before any step: nothing touched.
    let changes = [change("a.txt", Some("stale\n"), Some("new\n"), Some(0o640))];
    let failure = act::commit(&ws, &changes, &["never".to_owned()]).unwrap_err();
    assert!(failure.touched.is_empty());
    assert!(!dir.path().join("never").exists());
    assert_eq!(text(dir.path(), "a.txt"), "old\n");
}

#[test]
fn undo_restores_what_a_failed_commit_left_and_leaves_what_is_at_its_pre_image() {
    // A commit that wrote a.txt and then failed with its rollback incomplete: undo restores
    // a.txt. The record is written by hand, as no failure reachable by root leaves one.
    let dir = repo("failed-undo", &[("a.txt", "old\n")]);
    let mut c = cfg();
    c.max_turns = 1;
    let out = session(&engine(&[EDIT_A.to_owned()]), dir.path(), &c);
    assert_eq!(text(dir.path(), "a.txt"), "new\n");
    let path = journal_path(dir.path(), &out.session);
    let mut text_ = std::fs::read_to_string(&path).unwrap();
    text_.push_str(
        r#"{"event":"commit_failed","id":1,"reason":"disk full","touched":["a.txt"],"unrestored":["a.txt"],"rolled_back":false}"#,
    );
    text_.push('\n');
    std::fs::write(&path, text_).unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    // At neither its pre-image nor what the commit wrote: refused without --force.
    std::fs::write(dir.path().join("a.txt"), "mine\n").unwrap();
    let err = agent::undo(&ws, None, 1, false).unwrap_err();
    assert!(
        matches!(err, JournalError::ChangedSince { id: 1, .. }),
        "{err}"
    );
    assert_eq!(text(dir.path(), "a.txt"), "mine\n");
    std::fs::write(dir.path().join("a.txt"), "new\n").unwrap();
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["a.txt"]);
    assert_eq!(text(dir.path(), "a.txt"), "old\n");
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
}

#[test]
fn undo_of_a_move_cut_by_a_crash_removes_only_what_it_wrote() {
    // A crash between writing the target and removing the source: both exist, and the
    // journal has the commit's records but no outcome.
    let dir = repo("crash-move", &[("a.txt", "a\n")]);
    let e = engine(&["MOVE a.txt -> b.txt\n".to_owned(), "DONE\n".to_owned()]);
    session(&e, dir.path(), &cfg());
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let restored = agent::undo(&ws, None, 1, false).unwrap();
    assert_eq!(restored, ["a.txt", "b.txt"]);
    assert_eq!(text(dir.path(), "a.txt"), "a\n");
    assert!(!dir.path().join("b.txt").exists());
}

// ---------------------------------------------------------------------------------------
// Undo trusts nothing it reads.

/// A repository with one committed edit of a.txt (and a file outside it that a hostile
/// journal might try to read in), ready to be tampered with.
fn edited() -> (tempfile::TempDir, String) {
    let dir = repo("tamper", &[("a.txt", "old\n")]);
    std::fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
    let mut c = cfg();
    c.max_turns = 1;
    let out = session(&engine(&[EDIT_A.to_owned()]), dir.path(), &c);
    assert_eq!(text(dir.path(), "a.txt"), "new\n");
    (dir, out.session)
}

/// Undo must refuse the tampered journal, naming `field` of the commit's line, with
/// nothing written.
fn refused(dir: &Path, session: &str, field: &str) -> JournalError {
    let ws = Workspace::new(dir).unwrap();
    let before = snapshot(dir);
    let err = agent::undo(&ws, None, 1, true).unwrap_err();
    assert_eq!(snapshot(dir), before, "nothing is written: {err}");
    let want = line_of(dir, session, "commit");
    match &err {
        JournalError::Tampered { line, field: f, .. } => {
            assert_eq!((*line, *f), (want, field), "{err}")
        }
        other => panic!("not refused as tampered: {other}"),
    }
    assert_eq!(text(dir, "a.txt"), "new\n");
    err
}

#[test]
fn undo_refuses_a_blob_name_that_is_a_path() {
    for sha in ["../../../outside.txt", "/etc/passwd", "ABCDEF", ""] {
        let (dir, session) = edited();
        tamper(dir.path(), &session, |v| {
            if v["event"] == "commit" {
                v["pre_sha256"] = sha.into();
            }
        });
        let err = refused(dir.path(), &session, "pre_sha256");
        assert!(err.to_string().contains("not a sha256"), "{err}");
    }
}

#[test]
fn undo_refuses_a_blob_whose_bytes_do_not_hash_to_its_name() {
    let (dir, session) = edited();
    let blobs = dir
        .path()
        .join(".bellows/sessions")
        .join(&session)
        .join("blobs");
    let blob = std::fs::read_dir(&blobs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&blob, "#!/bin/sh\nrm -rf ~\n").unwrap();
    let err = refused(dir.path(), &session, "pre_sha256");
    assert!(err.to_string().contains("hash to"), "{err}");
    // A link in its place (to bytes outside the session) is refused as well.
    std::fs::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), &blob).unwrap();
    let err = refused(dir.path(), &session, "pre_sha256");
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn undo_refuses_mode_bits_beyond_the_permission_bits() {
    for bad in [0o4755, 0o2755, 0o1777, 0o10644] {
        let (dir, session) = edited();
        tamper(dir.path(), &session, |v| {
            if v["event"] == "commit" {
                v["pre_mode"] = bad.into();
            }
        });
        let err = refused(dir.path(), &session, "pre_mode");
        assert!(err.to_string().contains(&format!("{bad:#o}")), "{err}");
    }
}

#[test]
fn undo_refuses_a_path_outside_the_repository() {
    for path in ["../outside.txt", "/etc/passwd", ".git/config", ".bellows/x"] {
        let (dir, session) = edited();
        tamper(dir.path(), &session, |v| {
            if v["event"] == "commit" {
                v["path"] = path.into();
            }
        });
        refused(dir.path(), &session, "path");
    }
}

#[test]
fn a_setuid_file_is_journaled_and_restored_with_its_permission_bits_only() {
    let dir = repo("setuid", &[("a.txt", "old\n")]);
    set_mode(&dir.path().join("a.txt"), 0o4755);
    let out = session(
        &engine(&[EDIT_A.to_owned(), "DONE\n".to_owned()]),
        dir.path(),
        &cfg(),
    );
    let modes: Vec<Option<u32>> = events(dir.path(), &out.session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Commit { pre_mode, .. } => Some(pre_mode),
            _ => None,
        })
        .collect();
    assert_eq!(modes, [Some(0o755)]);
    let ws = Workspace::new(dir.path()).unwrap();
    agent::undo(&ws, None, 1, false).unwrap();
    assert_eq!(text(dir.path(), "a.txt"), "old\n");
    assert_eq!(mode(&dir.path().join("a.txt")), 0o755);
}

#[test]
fn hostile_session_ids_are_refused_by_undo_and_resume() {
    let (dir, _) = edited();
    let ws = Workspace::new(dir.path()).unwrap();
    let before = snapshot(dir.path());
    for id in [
        "../x", "/abs", "a/b", "..", ".", "", "1-2", "1-2-3-4", "1-2-x", "1-2-3/..", "１-2-3",
    ] {
        let err = agent::undo(&ws, Some(id), 1, true).unwrap_err();
        assert!(
            matches!(err, JournalError::BadSessionId(_)),
            "{id:?}: {err}"
        );
        let err = agent::Journal::open(&ws, id).unwrap_err();
        assert!(
            matches!(err, JournalError::BadSessionId(_)),
            "{id:?}: {err}"
        );
    }
    assert_eq!(snapshot(dir.path()), before);
}

/// Plants a session directory named `name` whose journal claims a start at `started` and a
/// commit that, undone, would delete a.txt.
fn plant(dir: &Path, name: &str, started: u64) {
    let sessions = dir.join(".bellows/sessions").join(name);
    std::fs::create_dir_all(&sessions).unwrap();
    let lines = [
        format!(
            r#"{{"event":"start","session":"{name}","task":"t","mode":"auto","model":"m","n_ctx":1,"started_unix_ms":{started}}}"#
        ),
        r#"{"event":"commit","turn":1,"id":1,"path":"a.txt","pre_sha256":null,"post_sha256":null,"pre_mode":null,"repairs":[]}"#
            .to_owned(),
    ];
    std::fs::write(sessions.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
}

#[test]
fn the_latest_session_is_the_one_started_last_never_the_last_name() {
    let (dir, real) = edited();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // Later names than the real session's: one starting in the future, one long ago, one
    // with no valid id for a name, one with no start record.
    plant(dir.path(), "9999999999-1-0", now + 86_400_000);
    plant(dir.path(), "9999999998-1-0", 1);
    plant(dir.path(), "zzzz", now);
    std::fs::create_dir_all(dir.path().join(".bellows/sessions/9999999997-1-0")).unwrap();
    std::fs::write(
        dir.path()
            .join(".bellows/sessions/9999999997-1-0/journal.jsonl"),
        "{\"event\":\"stop\"}\n",
    )
    .unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    // The real session's edit is what gets undone.
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["a.txt"]);
    assert_eq!(text(dir.path(), "a.txt"), "old\n");
    let undone = events(dir.path(), &real)
        .iter()
        .filter(|e| matches!(e, Event::Undo { .. }))
        .count();
    assert_eq!(undone, 1);

    // Of two real sessions the later one is picked, though its name sorts first.
    let other = repo("two", &[("a.txt", "old\n")]);
    let mut c = cfg();
    c.max_turns = 1;
    let early = session(&engine(&[EDIT_A.to_owned()]), other.path(), &c);
    // Started a second earlier, so that the two never share a millisecond.
    tamper(other.path(), &early.session, |v| {
        if v["event"] == "start" {
            v["started_unix_ms"] = (v["started_unix_ms"].as_u64().unwrap() - 1000).into();
        }
    });
    let late = session(
        &engine(&["CREATE n.txt\n<<<<<<< SEARCH\n=======\nn\n>>>>>>> REPLACE\n".to_owned()]),
        other.path(),
        &c,
    );
    let sessions = other.path().join(".bellows/sessions");
    // Rename the later session to a name that sorts before the earlier one.
    let renamed = "0000000001-1-0";
    std::fs::rename(sessions.join(&late.session), sessions.join(renamed)).unwrap();
    assert!(renamed < early.session.as_str());
    let ws = Workspace::new(other.path()).unwrap();
    assert_eq!(agent::undo(&ws, None, 1, false).unwrap(), ["n.txt"]);
    assert_eq!(text(other.path(), "a.txt"), "new\n");
}

// ---------------------------------------------------------------------------------------
// One typed reader.

#[test]
fn a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error() {
    let (dir, session) = edited();
    let path = journal_path(dir.path(), &session);
    let whole = std::fs::read_to_string(&path).unwrap();
    let n = whole.lines().count();
    // A crash mid-write tears the last line: it is skipped.
    std::fs::write(&path, format!("{whole}{{\"event\":\"repl")).unwrap();
    assert_eq!(journal::read_events(&path).unwrap().len(), n);
    // A resume cuts the torn tail before appending, so the journal reads whole afterwards.
    let out = resume(
        &engine(&["DONE\n".to_owned()]),
        dir.path(),
        &cfg(),
        &session,
    );
    assert_eq!(out.reason, StopReason::Done);
    let after = journal::read_events(&path).unwrap();
    assert!(after.len() > n);
    assert!(matches!(after.last(), Some(Event::Stop { .. })));

    // Garbage in the middle is an error naming its line, for every reader.
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.insert(2, "not json at all".to_owned());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    match journal::read_events(&path).unwrap_err() {
        JournalError::BadLine { line, .. } => assert_eq!(line, 3),
        other => panic!("{other}"),
    }
    let ws = Workspace::new(dir.path()).unwrap();
    let before = snapshot(dir.path());
    let err = agent::undo(&ws, None, 1, false).unwrap_err();
    assert!(
        matches!(err, JournalError::BadLine { line: 3, .. }),
        "{err}"
    );
    assert_eq!(snapshot(dir.path()), before);
    let err = rt()
        .block_on(agent::resume(
            &engine::<&str>(&[]),
            &ws,
            &cfg(),
            &session,
            &mut ScriptedApprover::default(),
            &mut Quiet,
        ))
        .unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    // A complete last line that is not an event is no torn write either.
    let mut lines = whole.lines().map(str::to_owned).collect::<Vec<_>>();
    lines.push("{\"event\":\"no_such_event\"}".to_owned());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert!(matches!(
        journal::read_events(&path).unwrap_err(),
        JournalError::BadLine { .. }
    ));
}
