//! No crate of the workspace has an import cycle between its top-level modules.
//!
//! For every member of the workspace (read from the root `Cargo.toml`, so a new crate is
//! checked without being listed here) this reads `src/`, maps each file to the top-level module
//! it belongs to (`src/x.rs` and everything under `src/x/` are `x`), and collects the edges
//! `a → b` where code in `a` names `b` through `crate::b`, `super::b` from `a`'s top level, or
//! a name the crate root re-exports from `b` (`crate::Interrupt` is `interrupt`). Comments,
//! strings and `super::` inside `a` (a test module's `use super::*`) are not edges. Any cycle
//! fails the test with its path and where each of its edges is written.
//!
//! `codec/tests/layers.rs` goes further for the codec (a declared layer per module); this is
//! the floor every crate stands on. See "Architecture Invariant" lines in `ARCHITECTURE.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One token of Rust source, with its line. Comments and the contents of string and character
/// literals are dropped, so nothing in them can look like a path.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Open,
    Close,
    Other(char),
}

fn lex(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1, &mut line);
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a), which is skipped.
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // Raw and byte strings: r"..", r#".."#, b"..", br#".."#, and byte characters.
            let raw = matches!(word.as_str(), "r" | "br") && matches!(at(i), '"' | '#');
            if raw {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                if at(i) == '"' {
                    i += 1;
                    while i < chars.len() {
                        if chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                            i += 1 + hashes;
                            break;
                        }
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                }
            } else if word == "b" && at(i) == '"' {
                i = skip_string(&chars, i + 1, &mut line);
            } else if word == "b" && at(i) == '\'' {
                i += if at(i + 1) == '\\' { 4 } else { 3 };
                while i < chars.len() && chars[i - 1] != '\'' {
                    i += 1;
                }
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Tok::PathSep, line));
            i += 2;
        } else if c == '{' {
            out.push((Tok::Open, line));
            i += 1;
        } else if c == '}' {
            out.push((Tok::Close, line));
            i += 1;
        } else {
            out.push((Tok::Other(c), line));
            i += 1;
        }
    }
    out
}

/// Skips a string literal's body from just after its opening quote; returns the index after
/// the closing quote.
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

fn ident(toks: &[(Tok, usize)], i: usize) -> Option<&str> {
    match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

fn is(toks: &[(Tok, usize)], i: usize, t: &Tok) -> bool {
    toks.get(i).is_some_and(|(x, _)| x == t)
}

/// A name the crate root brings into scope from one of its modules (`pub use run::Tally;`,
/// `pub use journal::{Journal, undo};`), with that module.
fn root_imports(root: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let toks = lex(root);
    let mut names = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        if ident(&toks, i) != Some("use") {
            i += 1;
            continue;
        }
        i += 1;
        while matches!(ident(&toks, i), Some("crate" | "self")) || is(&toks, i, &Tok::PathSep) {
            i += 1;
        }
        let Some(module) = ident(&toks, i).filter(|m| modules.contains(*m)) else {
            continue;
        };
        let module = module.to_owned();
        // The leaves of the use tree: a name followed by `,`, `}`, `;` or `as`.
        while i < toks.len() && !is(&toks, i, &Tok::Other(';')) {
            if let Some(name) = ident(&toks, i) {
                let next = toks.get(i + 1).map(|(t, _)| t);
                let leaf = matches!(next, Some(Tok::Close | Tok::Other(',' | ';')));
                if ident(&toks, i + 1) == Some("as") {
                    if let Some(alias) = ident(&toks, i + 2) {
                        names.insert(alias.to_owned(), module.clone());
                    }
                    i += 2;
                } else if leaf && name != "self" {
                    names.insert(name.to_owned(), module.clone());
                }
            }
            i += 1;
        }
    }
    names
}

/// One edge `from → to`, where it is written.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    at: String,
}

/// The modules a source file of top-level module `module` refers to. `inner` is the file's
/// module path below `module` (`["x"]` for `src/module/x.rs`), which `super::` climbs.
fn refs(
    text: &str,
    module: &str,
    inner: &[String],
    modules: &BTreeSet<String>,
    imports: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let toks = lex(text);
    let mut found = Vec::new();
    // Inline modules (`mod tests { .. }`) open at a brace depth; `super::` climbs them first.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0;
    let resolve = |name: &str, path_follows: bool, found: &mut Vec<(String, usize)>, line| {
        if path_follows && modules.contains(name) {
            found.push((name.to_owned(), line));
            return;
        }
        if let Some(m) = imports.get(name) {
            found.push((m.clone(), line));
        }
        if !path_follows && modules.contains(name) {
            found.push((name.to_owned(), line));
        }
    };
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth -= 1;
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" && is(&toks, i + 2, &Tok::Open) => {
                inline.push(depth);
            }
            Tok::Ident(w)
                if (w == "crate" || w == "super")
                    && is(&toks, i + 1, &Tok::PathSep)
                    && !(i > 0 && is(&toks, i - 1, &Tok::PathSep)) =>
            {
                // How many modules up the path starts, from this file's own module path.
                let mut j = i;
                let at_root = if w == "crate" {
                    j += 2;
                    true
                } else {
                    let mut ups = 0;
                    while ident(&toks, j) == Some("super") && is(&toks, j + 1, &Tok::PathSep) {
                        ups += 1;
                        j += 2;
                    }
                    // The file's module path is `module`, `inner`, then the inline modules.
                    ups > inner.len() + inline.len()
                };
                if at_root {
                    if let Some(name) = ident(&toks, j) {
                        resolve(name, is(&toks, j + 1, &Tok::PathSep), &mut found, *line);
                    } else if is(&toks, j, &Tok::Open) {
                        // A use group: the first name of each item at the group's top level.
                        let mut level = 0;
                        let mut k = j;
                        let mut item_start = true;
                        while k < toks.len() {
                            match &toks[k].0 {
                                Tok::Open => level += 1,
                                Tok::Close => {
                                    level -= 1;
                                    if level == 0 {
                                        break;
                                    }
                                }
                                Tok::Other(',') if level == 1 => item_start = true,
                                Tok::Ident(name) if level == 1 && item_start => {
                                    let path = is(&toks, k + 1, &Tok::PathSep);
                                    resolve(name, path, &mut found, toks[k].1);
                                    item_start = false;
                                }
                                _ => {}
                            }
                            k += 1;
                        }
                    }
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found.retain(|(m, _)| m != module);
    found
}

/// Every `.rs` file under `dir`, as (path, module path below the top-level module).
fn rust_files(dir: &Path, inner: &[String], out: &mut Vec<(PathBuf, Vec<String>)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() {
            let mut deeper = inner.to_vec();
            deeper.push(stem);
            rust_files(&path, &deeper, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut own = inner.to_vec();
            if stem != "mod" {
                own.push(stem);
            }
            out.push((path, own));
        }
    }
}

/// The edges between the top-level modules of the crate whose sources are in `src`.
fn crate_edges(src: &Path, label: &str) -> (BTreeSet<String>, Vec<Edge>) {
    let mut files = Vec::new();
    rust_files(src, &[], &mut files);
    // The crate root is `lib.rs`; a `main.rs` beside it is another crate (the binary), which
    // reaches the library by its name, not through `crate::`.
    let root_name = if src.join("lib.rs").is_file() {
        "lib"
    } else {
        "main"
    };
    let in_module =
        |own: &[String]| own.len() > 1 || (own.len() == 1 && own[0] != "lib" && own[0] != "main");
    let modules: BTreeSet<String> = files
        .iter()
        .filter(|(p, own)| in_module(own) && !p.starts_with(src.join("bin")))
        .map(|(_, own)| own[0].clone())
        .collect();
    let root = std::fs::read_to_string(src.join(format!("{root_name}.rs"))).unwrap_or_default();
    let imports = root_imports(&root, &modules);
    let mut edges = Vec::new();
    for (path, own) in &files {
        if !in_module(own) || path.starts_with(src.join("bin")) {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("source is UTF-8");
        let rel = path.strip_prefix(src).unwrap_or(path).display().to_string();
        for (to, line) in refs(&text, &own[0], &own[1..], &modules, &imports) {
            edges.push(Edge {
                from: own[0].clone(),
                to,
                at: format!("{label}/src/{rel}:{line}"),
            });
        }
    }
    (modules, edges)
}

/// The cycles among `edges`: one per strongly connected component of more than one module,
/// each as a closed path `a → b → … → a`.
fn cycles(modules: &BTreeSet<String>, edges: &[Edge]) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        next.entry(&e.from).or_default().insert(&e.to);
    }
    let reaches = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(m) = stack.pop() {
            for n in next.get(m).into_iter().flatten() {
                if seen.insert(*n) {
                    stack.push(n);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&str, BTreeSet<&str>> =
        modules.iter().map(|m| (m.as_str(), reaches(m))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in modules {
        let m = m.as_str();
        if done.contains(m) || !reach[m].contains(m) {
            continue;
        }
        // The component: what m reaches and what reaches m.
        let component: BTreeSet<&str> = reach[m]
            .iter()
            .copied()
            .filter(|n| reach[n].contains(m))
            .collect();
        done.extend(component.iter().copied());
        // The shortest path from m back to m, inside the component.
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([m]);
        'search: while let Some(a) = queue.pop_front() {
            for b in next.get(a).into_iter().flatten() {
                if !component.contains(b) {
                    continue;
                }
                if *b == m {
                    let mut path = vec![m.to_owned()];
                    let mut at = a;
                    while at != m {
                        path.push(at.to_owned());
                        at = parent[at];
                    }
                    path.push(m.to_owned());
                    path.reverse();
                    out.push(path);
                    break 'search;
                }
                if !parent.contains_key(b) {
                    parent.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
    }
    out
}

/// The workspace members (and the root package itself), as directories.
fn crates() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
        .expect("read Cargo.toml")
        .parse()
        .expect("Cargo.toml parses");
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("workspace.members");
    let mut out: Vec<(String, PathBuf)> = members
        .iter()
        .map(|m| {
            let m = m.as_str().expect("a member is a path");
            (m.to_owned(), root.join(m))
        })
        .collect();
    out.push((".".to_owned(), root.to_owned()));
    out
}

fn report(label: &str, cycle: &[String], edges: &[Edge]) -> String {
    let mut s = format!("{label}: {}", cycle.join(" → "));
    for pair in cycle.windows(2) {
        let at: Vec<&str> = edges
            .iter()
            .filter(|e| e.from == pair[0] && e.to == pair[1])
            .map(|e| e.at.as_str())
            .take(3)
            .collect();
        s.push_str(&format!(
            "\n    {} → {}: {}",
            pair[0],
            pair[1],
            at.join(", ")
        ));
    }
    s
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut problems = Vec::new();
    for (label, dir) in crates() {
        let (modules, edges) = crate_edges(&dir.join("src"), &label);
        for cycle in cycles(&modules, &edges) {
            problems.push(report(&label, &cycle, &edges));
        }
    }
    assert!(
        problems.is_empty(),
        "module cycles (a module that uses another must not be used by it, even indirectly):\n{}",
        problems.join("\n")
    );
}

/// The check is not vacuous: every crate it reads has modules, and the library crates it must
/// cover are all among them.
#[test]
fn every_crate_is_checked() {
    let labels: Vec<String> = crates().into_iter().map(|(l, _)| l).collect();
    for needed in ["codec", "models", "agent", "gateway", "cli"] {
        assert!(
            labels.iter().any(|l| l == needed),
            "{needed} is not checked"
        );
    }
    for (label, dir) in crates() {
        if label == "." {
            continue;
        }
        let (modules, edges) = crate_edges(&dir.join("src"), &label);
        assert!(modules.len() > 1, "{label}: modules {modules:?}");
        assert!(!edges.is_empty(), "{label}: no edges found");
    }
}

/// The scanner on small sources: what is an edge and what is not.
#[test]
fn edges_are_read_as_the_compiler_resolves_paths() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d", "e"].map(str::to_owned).into();
    let imports = root_imports(
        "pub use d::{Thing, other as Renamed};\nuse e::Hidden;\n",
        &modules,
    );
    let check = |text: &str, inner: &[&str], expect: &[&str]| {
        let inner: Vec<String> = inner.iter().map(|s| s.to_string()).collect();
        let mut got: Vec<String> = refs(text, "a", &inner, &modules, &imports)
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        got.sort();
        got.dedup();
        assert_eq!(got, expect, "{text}");
    };
    check("use crate::b::X;", &[], &["b"]);
    check("use crate::{b, c::Y};", &[], &["b", "c"]);
    check("fn f() { crate::b::g(); super::c::h(); }", &[], &["b", "c"]);
    check(
        "fn f() -> crate::Thing { crate::Renamed::new(); crate::Hidden }",
        &[],
        &["d", "e"],
    );
    // `super` in a submodule file or an inline module stays inside the module...
    check("use super::b::X;", &["x"], &[]);
    check("mod tests { use super::*; use super::b; }", &[], &[]);
    // ...unless it climbs to the crate root.
    check("use super::super::b::X;", &["x"], &["b"]);
    check("mod tests { fn f() { super::super::c::g() } }", &[], &["c"]);
    check("mod t { }\nuse super::b;", &[], &["b"]);
    // Comments, doc comments, strings and characters are not code.
    check(
        "// crate::b\n/// [`crate::b`]\n/* crate::c /* nested */ crate::c */\n\
         const S: &str = \"crate::b\"; const R: &str = r#\"crate::\"c\"#; const Q: char = '{';\n\
         fn f<'a>(x: &'a str) {}",
        &[],
        &[],
    );
    // Visibility is not a path; its own module is not an edge.
    check("pub(crate) fn f() { crate::a::g() }", &[], &[]);
}

#[test]
fn a_cycle_is_found_and_shown_with_its_places() {
    let modules: BTreeSet<String> = ["run", "resume", "view", "x", "y", "z"]
        .map(str::to_owned)
        .into();
    let edge = |from: &str, to: &str| Edge {
        from: from.to_owned(),
        to: to.to_owned(),
        at: format!("{from}.rs:1"),
    };
    let edges = [
        edge("run", "resume"),
        edge("resume", "run"),
        edge("run", "view"),
        edge("resume", "view"),
        edge("x", "y"),
        edge("y", "z"),
        edge("z", "x"),
    ];
    let found = cycles(&modules, &edges);
    assert_eq!(
        found,
        [vec!["resume", "run", "resume"], vec!["x", "y", "z", "x"]]
    );
    assert_eq!(
        report("agent", &found[0], &edges),
        "agent: resume → run → resume\n    resume → run: resume.rs:1\n    run → resume: run.rs:1"
    );
    assert!(cycles(&modules, &edges[2..4]).is_empty());
}
