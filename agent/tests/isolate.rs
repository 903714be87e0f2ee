//! Confinement and isolation: `.git` refused at any depth, symbolic links in `--isolate`
//! copies, promotion and bench copies (copied as links, never followed; those that leave the
//! repository refused), a failed isolation leaving nothing behind, and git-ignored build
//! output never promoted. Each runs on a temporary directory, most both as a plain directory
//! and as a git repository.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

use std::path::{Path, PathBuf};

use agent::Workspace;
use agent::act::{Plan, plan};
use agent::isolate::{self, Change, IsolateError, Pending};
use agent::workspace::{EntryKind, WorkspaceError};
use codec::Action;

/// A fresh directory under the system temp dir with the given files.
fn tree(name: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("bellows-isolate-{name}-"))
        .tempdir()
        .unwrap();
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn link(root: &Path, path: &str, target: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, p).unwrap();
}

fn read_link(root: &Path, path: &str) -> Option<PathBuf> {
    std::fs::read_link(root.join(path)).ok()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Makes `dir` a git repository with everything in it committed.
fn commit_all(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "start"]);
}

/// The two kinds of isolated copy.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Worktree,
}

/// The worktrees git has registered for `dir`, the main one included.
fn worktrees(dir: &Path) -> Vec<String> {
    git(dir, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(str::to_owned)
        .collect()
}

/// What `.bellows/isolated/` holds (copies and base records).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join(".bellows/isolated"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts that isolating `dir` failed and left nothing of the copy behind.
fn assert_nothing_left(dir: &Path, kind: Kind) {
    assert_eq!(leftovers(dir), Vec::<String>::new(), "{kind:?}");
    if kind == Kind::Worktree {
        let listed = worktrees(dir);
        assert_eq!(listed.len(), 1, "only the main tree: {listed:?}");
        assert!(!listed[0].contains(".bellows"), "{listed:?}");
    }
}

/// The observation a read-only action answers with.
fn observe(ws: &Workspace, action: Action) -> agent::Observation {
    match plan(ws, &action) {
        Ok(Plan::Observed(o)) => o,
        Ok(other) => panic!("not an observation: {other:?}"),
        Err(o) => o,
    }
}

#[test]
fn dot_git_is_refused_at_any_depth_and_in_any_case() {
    let dir = tree(
        "dotgit",
        &[
            ("sub/.git/hooks/pre-commit", "#!/bin/sh\n"),
            ("a/b/.GIT/config", "[core]\n"),
            ("vendor/.bellows/sessions/x", "state\n"),
            ("ok.txt", "fine\n"),
        ],
    );
    link(dir.path(), "hooks", "sub/.git/hooks");
    let ws = Workspace::new(dir.path()).unwrap();
    for path in [
        "sub/.git/hooks/pre-commit",
        "sub/.git/hooks/post-checkout",
        "a/b/.GIT/config",
        "./a/b/.Git/config",
        "vendor/.bellows/sessions/x",
        ".Bellows/x",
        // Through a link: refused after resolution.
        "hooks/pre-commit",
        "hooks/post-checkout",
    ] {
        assert!(
            matches!(ws.read(path), Err(WorkspaceError::Private(_))),
            "read {path}: {:?}",
            ws.read(path)
        );
        assert!(
            matches!(
                ws.write_atomic(path, b"#!/bin/sh\nevil\n"),
                Err(WorkspaceError::Private(_))
            ),
            "write {path}"
        );
        assert!(
            matches!(ws.resolve_nofollow(path), Err(WorkspaceError::Private(_))),
            "resolve_nofollow {path}"
        );
        // Through the act pipeline: the proposal is refused before any preview.
        let create = Action::Create {
            path: path.into(),
            content: "evil\n".into(),
        };
        assert!(
            matches!(plan(&ws, &create), Err(o) if !o.ok),
            "create {path}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/.git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\n"
    );
    assert!(!dir.path().join("sub/.git/hooks/post-checkout").exists());
    // Names that merely contain `.git` are ordinary.
    assert!(ws.write_atomic("docs/.github/x.yml", b"on: push\n").is_ok());
    assert!(ws.write_atomic("a/.gitignore", b"*.o\n").is_ok());
    assert_eq!(ws.read("ok.txt").unwrap().unwrap(), b"fine\n");
}

#[test]
fn glob_grep_and_list_never_show_a_nested_git() {
    let outside = tree("outside", &[("secret.txt", "needle outside\n")]);
    let dir = tree(
        "dotgit-list",
        &[
            ("sub/.git/config", "needle in git\n"),
            ("sub/code.rs", "needle in code\n"),
            ("a/b/.GIT/HEAD", "needle in GIT\n"),
            ("a/b/c.txt", "plain\n"),
        ],
    );
    link(
        dir.path(),
        "out",
        outside.path().join("secret.txt").to_str().unwrap(),
    );
    let ws = Workspace::new(dir.path()).unwrap();

    let glob = observe(
        &ws,
        Action::Glob {
            pattern: "**".into(),
        },
    );
    assert_eq!(glob.output, "a/b/c.txt\nout\nsub/code.rs");
    let grep = observe(
        &ws,
        Action::Grep {
            pattern: "needle".into(),
            path: None,
        },
    );
    // Neither the nested `.git` nor the file the link points to outside is read.
    assert_eq!(grep.output, "sub/code.rs:1: needle in code");
    for (path, shown) in [("sub", "code.rs"), ("a/b", "c.txt")] {
        let list = observe(&ws, Action::List { path: path.into() });
        assert!(list.ok, "{list:?}");
        assert_eq!(list.output, shown, "LIST {path}");
    }
    let list = observe(
        &ws,
        Action::List {
            path: "sub/.git".into(),
        },
    );
    assert!(!list.ok && !list.output.contains("config"), "{list:?}");
    let entries = ws.entries("").unwrap();
    assert!(
        entries
            .iter()
            .all(|e| !e.path.to_lowercase().contains(".git"))
    );
    assert_eq!(
        entries.iter().find(|e| e.path == "out").map(|e| e.kind),
        Some(EntryKind::Link)
    );
}

/// A repository with every kind of link that stays inside: to a file, to a directory (whose
/// files must not be copied twice), dangling, and in a subdirectory going up. In a git
/// repository half are committed and half untracked.
fn repo_with_inner_links(kind: Kind) -> tempfile::TempDir {
    let dir = tree(
        "links",
        &[
            ("a.txt", "a\n"),
            ("b.txt", "b\n"),
            ("sub/inner.txt", "inner\n"),
        ],
    );
    link(dir.path(), "to_file", "a.txt");
    link(dir.path(), "to_dir", "sub");
    if kind == Kind::Worktree {
        commit_all(dir.path());
    }
    link(dir.path(), "dangling", "nowhere/x.txt");
    link(dir.path(), "sub/up", "../b.txt");
    dir
}

const INNER_LINKS: [(&str, &str); 4] = [
    ("dangling", "nowhere/x.txt"),
    ("sub/up", "../b.txt"),
    ("to_dir", "sub"),
    ("to_file", "a.txt"),
];

#[test]
fn links_inside_the_repository_are_copied_as_links() {
    for kind in [Kind::Plain, Kind::Worktree] {
        let dir = repo_with_inner_links(kind);
        let ws = Workspace::new(dir.path()).unwrap();
        let (id, copy) = isolate::isolate(&ws).unwrap();
        assert_eq!(copy.root().join(".git").is_file(), kind == Kind::Worktree);
        for (path, target) in INNER_LINKS {
            assert_eq!(
                read_link(copy.root(), path),
                Some(PathBuf::from(target)),
                "{kind:?} {path}"
            );
        }
        // The directory link is not walked: its files are in the copy once, under `sub/`.
        let to_dir = copy.root().join("to_dir").symlink_metadata().unwrap();
        assert!(to_dir.is_symlink(), "{kind:?}");
        let links: Vec<String> = copy
            .entries("")
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::Link)
            .map(|e| e.path)
            .collect();
        assert_eq!(
            links,
            ["dangling", "sub/up", "to_dir", "to_file"],
            "{kind:?}"
        );
        // The base records links as links.
        let manifest = dir.path().join(format!(".bellows/isolated/{id}.base.json"));
        let base: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        assert_eq!(base["to_dir"], "link:sub");
        assert_eq!(base["sub/up"], "link:../b.txt");
        assert!(!base.contains_key("to_dir/inner.txt"), "{base:?}");
        assert_eq!(base["a.txt"].len(), 64);
        assert_eq!(isolate::pending(&ws, &id).unwrap(), Pending::default());
        assert_eq!(isolate::discard(&ws, &id).unwrap(), kind == Kind::Worktree);
        // Removing the copy removed its links, not what they point to.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sub/inner.txt")).unwrap(),
            "inner\n"
        );
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
}

#[test]
fn a_link_leaving_the_repository_refuses_isolation_and_leaves_nothing() {
    let outside = tree("outside", &[("x.txt", "outside\n")]);
    let abs = outside.path().join("x.txt");
    let abs = abs.to_str().unwrap();
    // (link, target, whether it is committed in the git repository)
    let cases: [(&str, &str, bool); 6] = [
        ("abs", abs, true),
        ("abs_untracked", abs, false),
        ("up", "../x.txt", true),
        ("sub/up2", "../../x.txt", false),
        ("sub/dangling_up", "nowhere/../../../x", false),
        // `top` is the root itself, so `top/..` is the root's parent.
        ("through", "top/../x.txt", false),
    ];
    for kind in [Kind::Plain, Kind::Worktree] {
        for (name, target, committed) in cases {
            let dir = tree("escape", &[("a.txt", "a\n"), ("sub/s.txt", "s\n")]);
            if name == "through" {
                link(dir.path(), "top", ".");
            }
            if committed {
                link(dir.path(), name, target);
            }
            if kind == Kind::Worktree {
                commit_all(dir.path());
                // An uncommitted edit too, so the diff is carried over before the refusal.
                write(dir.path(), "a.txt", "a edited\n");
            }
            if !committed {
                link(dir.path(), name, target);
            }
            let ws = Workspace::new(dir.path()).unwrap();
            let err = isolate::isolate(&ws).unwrap_err();
            assert!(
                matches!(&err, IsolateError::LinkLeaves { link, .. } if link == name),
                "{kind:?} {name}: {err}"
            );
            assert!(err.to_string().contains(name), "{err}");
            assert_nothing_left(dir.path(), kind);
            // The repository itself is untouched, the link included.
            assert_eq!(read_link(dir.path(), name), Some(PathBuf::from(target)));
        }
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("x.txt")).unwrap(),
        "outside\n"
    );
}

#[test]
fn a_failing_git_apply_leaves_no_worktree_behind() {
    let dir = tree("apply-fails", &[("a.txt", "one\n")]);
    commit_all(dir.path());
    write(dir.path(), "a.txt", "one\ntwo\n");
    // The repository's own post-checkout hook garbles the new worktree's a.txt, so the
    // uncommitted diff no longer applies there.
    let hook = dir.path().join(".git/hooks/post-checkout");
    std::fs::write(&hook, "#!/bin/sh\necho garbage > a.txt\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let err = isolate::isolate(&ws).unwrap_err();
    assert!(
        matches!(&err, IsolateError::Git { args, .. } if args.starts_with("apply")),
        "{err}"
    );
    assert_nothing_left(dir.path(), Kind::Worktree);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
}

#[test]
fn promote_recreates_links_and_refuses_one_that_leaves() {
    for kind in [Kind::Plain, Kind::Worktree] {
        let dir = repo_with_inner_links(kind);
        let ws = Workspace::new(dir.path()).unwrap();
        let (id, copy) = isolate::isolate(&ws).unwrap();
        let c = copy.root();
        // The session: a new link, a retargeted one, a removed one, a file edit.
        link(c, "sub/new_link", "../a.txt");
        std::fs::remove_file(c.join("to_file")).unwrap();
        link(c, "to_file", "b.txt");
        std::fs::remove_file(c.join("dangling")).unwrap();
        write(c, "a.txt", "a edited\n");
        let expected = vec![
            Change::Write("a.txt".into()),
            Change::Delete("dangling".into()),
            Change::Link {
                path: "sub/new_link".into(),
                target: "../a.txt".into(),
            },
            Change::Link {
                path: "to_file".into(),
                target: "b.txt".into(),
            },
        ];
        assert_eq!(isolate::changes(&ws, &id).unwrap(), expected, "{kind:?}");

        // A link leaving the repository refuses everything, --force or not.
        link(c, "sub/escape", "../../../../..");
        for force in [false, true] {
            let err = isolate::promote(&ws, &id, force).unwrap_err();
            assert!(
                matches!(&err, IsolateError::LinkLeaves { link, .. } if link == "sub/escape"),
                "{kind:?}: {err}"
            );
            assert_eq!(
                std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
                "a\n",
                "nothing written"
            );
            assert!(read_link(dir.path(), "sub/new_link").is_none());
            assert!(read_link(dir.path(), "sub/escape").is_none());
            assert_eq!(read_link(dir.path(), "to_file"), Some("a.txt".into()));
        }
        std::fs::remove_file(c.join("sub/escape")).unwrap();

        assert_eq!(isolate::promote(&ws, &id, false).unwrap(), expected);
        let real = dir.path();
        assert_eq!(
            std::fs::read_to_string(real.join("a.txt")).unwrap(),
            "a edited\n"
        );
        assert_eq!(read_link(real, "sub/new_link"), Some("../a.txt".into()));
        assert_eq!(read_link(real, "to_file"), Some("b.txt".into()));
        // The removed link is gone; what it pointed at never existed, and b.txt, which
        // the retargeted one points at, is untouched.
        assert!(real.join("dangling").symlink_metadata().is_err());
        assert_eq!(std::fs::read_to_string(real.join("b.txt")).unwrap(), "b\n");
        assert_eq!(isolate::discard(&ws, &id).unwrap(), kind == Kind::Worktree);
    }
}

#[test]
fn promote_refuses_a_link_that_leaves_only_through_another() {
    let dir = tree("through", &[("a.txt", "a\n")]);
    let ws = Workspace::new(dir.path()).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    // `top/../y` reads as `y`, but `top` is the root, so it is the root's parent's `y`.
    link(copy.root(), "top", ".");
    link(copy.root(), "x", "top/../y");
    let err = isolate::promote(&ws, &id, false).unwrap_err();
    assert!(
        matches!(&err, IsolateError::LinkLeaves { link, .. } if link == "x"),
        "{err}"
    );
    assert!(dir.path().join("top").symlink_metadata().is_err());
}

#[test]
fn promote_refuses_a_link_changed_in_the_repository_since() {
    for kind in [Kind::Plain, Kind::Worktree] {
        let dir = repo_with_inner_links(kind);
        let ws = Workspace::new(dir.path()).unwrap();
        let (id, copy) = isolate::isolate(&ws).unwrap();
        std::fs::remove_file(copy.root().join("to_dir")).unwrap();
        link(copy.root(), "to_dir", "a.txt");
        // Meanwhile the real tree's link was pointed elsewhere.
        std::fs::remove_file(dir.path().join("to_dir")).unwrap();
        link(dir.path(), "to_dir", "b.txt");
        let err = isolate::promote(&ws, &id, false).unwrap_err();
        assert!(
            matches!(&err, IsolateError::ChangedSince(p) if p == &["to_dir"]),
            "{kind:?}: {err}"
        );
        assert_eq!(read_link(dir.path(), "to_dir"), Some("b.txt".into()));
        // --force overwrites it, as a link still.
        isolate::promote(&ws, &id, true).unwrap();
        assert_eq!(read_link(dir.path(), "to_dir"), Some("a.txt".into()));
    }
}

#[test]
fn git_ignored_build_output_is_skipped_not_promoted_nor_refused() {
    let dir = tree(
        "ignored",
        &[
            ("app.py", "print('old')\n"),
            (".gitignore", "__pycache__/\ntarget/\n"),
        ],
    );
    commit_all(dir.path());
    // Ignored build output the real tree already has, differing from the copy's: were it
    // promoted it would also be a change made since, refusing everything.
    write(dir.path(), "target/out", "real build\n");
    let ws = Workspace::new(dir.path()).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    assert!(
        !copy.root().join("target").exists(),
        "ignored files stay behind"
    );
    // What a RUN would leave, and a real edit.
    write(copy.root(), "__pycache__/app.cpython-312.pyc", "\0bytecode");
    write(copy.root(), "target/out", "copy build\n");
    write(copy.root(), "app.py", "print('new')\n");
    let pending = isolate::pending(&ws, &id).unwrap();
    assert_eq!(pending.changes, [Change::Write("app.py".into())]);
    assert_eq!(
        pending.ignored,
        ["__pycache__/app.cpython-312.pyc", "target/out"]
    );
    assert_eq!(
        isolate::promote(&ws, &id, false).unwrap(),
        [Change::Write("app.py".into())]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("app.py")).unwrap(),
        "print('new')\n"
    );
    assert!(!dir.path().join("__pycache__").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("target/out")).unwrap(),
        "real build\n"
    );
}

#[test]
fn a_plain_copy_has_no_ignore_rules() {
    // Not a git repository: a `.gitignore` means nothing, so everything that differs goes.
    let dir = tree(
        "plain-ignored",
        &[("app.py", "old\n"), (".gitignore", "target/\n")],
    );
    let ws = Workspace::new(dir.path()).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    write(copy.root(), "target/out", "built\n");
    let pending = isolate::pending(&ws, &id).unwrap();
    assert_eq!(pending.changes, [Change::Write("target/out".into())]);
    assert!(pending.ignored.is_empty());
}

#[test]
fn promote_keeps_a_new_files_mode_bits() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tree("mode", &[("a.txt", "a\n")]);
    let ws = Workspace::new(dir.path()).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    write(copy.root(), "run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(
        copy.root().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    isolate::promote(&ws, &id, false).unwrap();
    let mode = std::fs::metadata(dir.path().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn only_ids_of_isolated_copies_are_accepted() {
    let dir = tree("ids", &[("a.txt", "a\n")]);
    std::fs::create_dir_all(dir.path().join(".bellows/isolated")).unwrap();
    std::fs::create_dir_all(dir.path().join(".bellows/sessions/1700000000-1-0")).unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    for id in [
        "",
        ".",
        "..",
        "../sessions/1700000000-1-0",
        "../../.bellows",
        "1700000000-1",
        "1700000000-1-0-0",
        "a-b-c",
        "1700000000-1-0",
    ] {
        assert!(
            matches!(isolate::discard(&ws, id), Err(IsolateError::NoCopy(_))),
            "discard {id:?}"
        );
        assert!(
            matches!(isolate::pending(&ws, id), Err(IsolateError::NoCopy(_))),
            "pending {id:?}"
        );
        assert!(
            matches!(
                isolate::promote(&ws, id, true),
                Err(IsolateError::NoCopy(_))
            ),
            "promote {id:?}"
        );
    }
    assert!(dir.path().join(".bellows/sessions/1700000000-1-0").is_dir());
    assert!(dir.path().join("a.txt").is_file());
}

#[test]
fn discarding_a_copy_does_not_follow_its_links_out() {
    let dir = tree("discard-links", &[("keep/k.txt", "k\n")]);
    commit_all(dir.path());
    let ws = Workspace::new(dir.path()).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    // A session's RUN could make any link; removing the copy must not empty its target.
    let real_keep = dir.path().join("keep");
    link(copy.root(), "back", real_keep.to_str().unwrap());
    assert!(isolate::discard(&ws, &id).unwrap());
    assert_eq!(
        std::fs::read_to_string(real_keep.join("k.txt")).unwrap(),
        "k\n"
    );
    assert_eq!(worktrees(dir.path()).len(), 1);
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

#[test]
fn bench_copy_tree_copies_links_as_links() {
    let outside = tree("outside", &[("x.txt", "x\n")]);
    let from = tree("bench-from", &[("a.txt", "a\n"), ("sub/s.txt", "s\n")]);
    let abs = outside.path().join("x.txt");
    let links = [
        ("to_file", "a.txt"),
        ("to_dir", "sub"),
        ("dangling", "nowhere"),
        ("sub/up", "../a.txt"),
        ("abs", abs.to_str().unwrap()),
    ];
    for (path, target) in links {
        link(from.path(), path, target);
    }
    let to = tree("bench-to", &[]);
    let dst = to.path().join("copy");
    agent::bench::copy_tree(from.path(), &dst).unwrap();
    for (path, target) in links {
        assert_eq!(read_link(&dst, path), Some(PathBuf::from(target)), "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(dst.join("sub/s.txt")).unwrap(),
        "s\n"
    );
    assert!(
        dst.join("to_dir").symlink_metadata().unwrap().is_symlink(),
        "a link to a directory is not walked into"
    );
}

#[test]
fn promote_judges_a_new_link_by_the_tree_it_lands_in() {
    let outside = tree("outside", &[("x/y.txt", "outside\n")]);
    let dir = tree("lands", &[("a.txt", "a\n"), (".gitignore", "build\n")]);
    commit_all(dir.path());
    // An ignored link in the real tree, which the worktree copy never gets.
    link(
        dir.path(),
        "build",
        outside.path().join("x").to_str().unwrap(),
    );
    let ws = Workspace::new(dir.path()).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    assert!(copy.root().join("build").symlink_metadata().is_err());
    // Dangling in the copy, but once promoted it would reach outside through `build`.
    link(copy.root(), "data", "build/y.txt");
    let err = isolate::promote(&ws, &id, false).unwrap_err();
    assert!(
        matches!(&err, IsolateError::LinkLeaves { link, .. } if link == "data"),
        "{err}"
    );
    assert!(dir.path().join("data").symlink_metadata().is_err());
}
