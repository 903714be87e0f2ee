//! Python imports the session broke. A small model moves `helpers.py` into `lib/` and leaves
//! `import helpers` in `main.py`, or renames `get_nme` in `util.py` and leaves
//! `from util import get_nme` in `report.py`, then says DONE: every file parses, so the syntax
//! check ([`crate::lint`]) passes, but the program no longer starts. This reads the imports of
//! the repository's Python files — without running anything — and names those that cannot
//! resolve *because of the session*:
//!
//! - a module whose file the session deleted or moved (`import helpers`, `helpers.py` gone);
//! - in a file the session wrote, a module of a package the repository has but not that
//!   module (`from lib.helper import x` with `lib/` but no `lib/helper.py`);
//! - `from M import name`, where `M` is a file of the repository, one of the two files was
//!   written by the session, and `name` appears nowhere in `M` (nor as its submodule).
//!
//! Anything else — the standard library, installed packages, an import that was broken before
//! and that the session did not touch — is never reported. Resolution follows what
//! `python3 FILE` and `python3 -m` from the root see: the importing file's directory, then the
//! repository root.

use std::collections::{BTreeSet, HashMap};

use crate::workspace::Workspace;

/// Python files read at most; a larger repository is not checked.
const MAX_FILES: usize = 400;

/// Bytes of one file read at most.
const MAX_BYTES: u64 = 256 * 1024;

/// One import statement.
#[derive(Debug, PartialEq, Eq)]
struct Import {
    line: usize,
    /// Dotted, without the leading dots of a relative import.
    module: String,
    /// Leading dots (0: absolute).
    level: usize,
    /// The names of `from M import a, b` (not `*`); empty for `import M`.
    names: Vec<String>,
}

/// The imports of `text`: `import a.b as c, d` and `from .a import b, c as d` on one line
/// (a parenthesised list is read when it closes on the same line).
fn imports(text: &str) -> Vec<Import> {
    let mut out = Vec::new();
    let mut in_string: Option<&str> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        // Lines inside a triple-quoted string are prose (a docstring's example).
        for quote in ["\"\"\"", "'''"] {
            let n = line.matches(quote).count();
            if in_string == Some(quote) {
                if n % 2 == 1 {
                    in_string = None;
                }
            } else if in_string.is_none() && n % 2 == 1 {
                in_string = Some(quote);
            }
        }
        if in_string.is_some() {
            continue;
        }
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(rest) = line.strip_prefix("import ") {
            for part in rest.split(',') {
                let module = part.split_whitespace().next().unwrap_or_default();
                if is_dotted(module) {
                    out.push(Import {
                        line: i + 1,
                        module: module.to_owned(),
                        level: 0,
                        names: Vec::new(),
                    });
                }
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else {
                continue;
            };
            let module = module.trim();
            let level = module.len() - module.trim_start_matches('.').len();
            let module = module.trim_start_matches('.');
            if !(module.is_empty() || is_dotted(module)) {
                continue;
            }
            let names = names.trim();
            let names = match names.strip_prefix('(') {
                Some(inner) => match inner.strip_suffix(')') {
                    Some(list) => list,
                    None => continue,
                },
                None => names,
            };
            let names: Vec<String> = names
                .split(',')
                .filter_map(|n| n.split_whitespace().next())
                .filter(|n| *n != "*" && is_identifier(n))
                .map(str::to_owned)
                .collect();
            out.push(Import {
                line: i + 1,
                module: module.to_owned(),
                level,
                names,
            });
        }
    }
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn is_dotted(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(is_identifier)
}

/// The repository's files as a set of paths, for resolving modules.
struct Tree {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
}

impl Tree {
    fn new(paths: &[String]) -> Tree {
        let mut dirs = BTreeSet::new();
        for p in paths {
            let mut d = p.as_str();
            while let Some((parent, _)) = d.rsplit_once('/') {
                dirs.insert(parent.to_owned());
                d = parent;
            }
        }
        Tree {
            files: paths.iter().cloned().collect(),
            dirs,
        }
    }

    /// The file that defines `rel` (a module path with `/`): `rel.py` or `rel/__init__.py`;
    /// `Some(None)` for a directory (a namespace package); `None` when neither exists.
    fn module(&self, rel: &str) -> Option<Option<String>> {
        let file = format!("{rel}.py");
        if self.files.contains(&file) {
            return Some(Some(file));
        }
        let init = format!("{rel}/__init__.py");
        if self.files.contains(&init) {
            return Some(Some(init));
        }
        self.dirs.contains(rel).then_some(None)
    }
}

/// Joins a directory and a relative path (either may be empty).
fn join(dir: &str, rel: &str) -> String {
    match (dir.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_owned(),
        (_, true) => dir.to_owned(),
        _ => format!("{dir}/{rel}"),
    }
}

/// The imports of the repository's Python files that the session broke (see the module's
/// documentation): one line each, `FILE line N: what is wrong`. `touched`: every path the
/// session wrote, deleted or moved.
pub fn broken(ws: &Workspace, touched: &BTreeSet<String>) -> Vec<(String, String)> {
    if touched.is_empty() {
        return Vec::new();
    }
    let Ok(paths) = ws.files("") else {
        return Vec::new();
    };
    let py: Vec<&String> = paths.iter().filter(|p| p.ends_with(".py")).collect();
    if py.len() > MAX_FILES {
        return Vec::new();
    }
    let tree = Tree::new(&paths);
    let mut texts: HashMap<String, Option<String>> = HashMap::new();
    let mut read = |path: &str| -> Option<String> {
        texts
            .entry(path.to_owned())
            .or_insert_with(|| {
                let full = ws.resolve_nofollow(path).ok()?;
                let meta = std::fs::symlink_metadata(&full).ok()?;
                if !meta.is_file() || meta.len() > MAX_BYTES {
                    return None;
                }
                String::from_utf8(std::fs::read(full).ok()?).ok()
            })
            .clone()
    };
    let mut out = Vec::new();
    for file in py {
        let Some(text) = read(file) else { continue };
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        let wrote_file = touched.contains(file.as_str());
        for imp in imports(&text) {
            // Where the module may live: relative imports from the file's package, absolute
            // ones from the file's directory, then the root.
            let bases: Vec<String> = if imp.level > 0 {
                let mut base = dir.to_owned();
                for _ in 1..imp.level {
                    base = base
                        .rsplit_once('/')
                        .map_or(String::new(), |(d, _)| d.to_owned());
                }
                vec![base]
            } else if dir.is_empty() {
                vec![String::new()]
            } else {
                vec![dir.to_owned(), String::new()]
            };
            let rel = imp.module.replace('.', "/");
            let found = bases.iter().find_map(|b| tree.module(&join(b, &rel)));
            let shown = format!("{}{}", ".".repeat(imp.level), imp.module);
            let Some(defined) = found else {
                if rel.is_empty() {
                    continue;
                }
                let gone = bases.iter().find_map(|b| {
                    let p = join(b, &rel);
                    [format!("{p}.py"), format!("{p}/__init__.py")]
                        .into_iter()
                        .find(|c| touched.contains(c))
                });
                let first = rel.split('/').next().unwrap_or_default();
                let package = rel.contains('/')
                    && bases.iter().any(|b| tree.module(&join(b, first)).is_some());
                if let Some(gone) = gone {
                    out.push((
                        file.clone(),
                        format!(
                            "line {} imports {shown}, but {gone} no longer exists",
                            imp.line
                        ),
                    ));
                } else if wrote_file && package {
                    out.push((
                        file.clone(),
                        format!(
                            "line {} imports {shown}, but the repository has no {rel}.py",
                            imp.line
                        ),
                    ));
                }
                continue;
            };
            // `from M import name`: the name must appear in M, or be a submodule of it.
            let Some(module_file) = defined else { continue };
            if !(wrote_file || touched.contains(&module_file)) {
                continue;
            }
            let Some(source) = read(&module_file) else {
                continue;
            };
            if source.contains("__getattr__") || source.contains("import *") {
                continue;
            }
            let package_dir = module_file
                .strip_suffix("/__init__.py")
                .map(str::to_owned)
                .unwrap_or_else(|| module_file.trim_end_matches(".py").to_owned());
            for name in &imp.names {
                if has_identifier(&source, name) || tree.module(&join(&package_dir, name)).is_some()
                {
                    continue;
                }
                out.push((
                    file.clone(),
                    format!(
                        "line {} imports {name} from {shown}, but {module_file} has no {name}",
                        imp.line
                    ),
                ));
            }
        }
    }
    out
}

/// Builtin names a line may use as `name.attr` without binding them.
const BUILTIN_TYPES: &[&str] = &[
    "str",
    "bytes",
    "int",
    "float",
    "dict",
    "list",
    "set",
    "tuple",
    "object",
    "type",
    "bool",
    "frozenset",
    "bytearray",
    "complex",
    "self",
    "cls",
];

/// `line` with its string literals and its comment taken out (a string's text is no code,
/// and an f-string's fields are left unread: nothing is reported from them).
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                    out.push(' ');
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => break,
            None => out.push(c),
        }
    }
    out
}

/// The names `line` uses as `name.attr` (an identifier after nothing that joins it to what
/// comes before, and followed by a dot).
fn dotted_names(line: &str) -> Vec<String> {
    let code = code_of(line);
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let joined = i > 0 && (chars[i - 1].is_alphanumeric() || matches!(chars[i - 1], '_' | '.'));
        if (c.is_alphabetic() || c == '_') && !joined {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if chars.get(i) == Some(&'.') {
                let name: String = chars[start..i].iter().collect();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
            continue;
        }
        i += 1;
    }
    out
}

/// `name` is bound somewhere in `text`: it occurs as a whole word not followed by `.` or `(`
/// (an import, a parameter, an assignment, a loop variable, `as name`). Generous on purpose:
/// a mention in a string counts too, so only a name the file never binds is reported.
fn binds(text: &str, name: &str) -> bool {
    // `import os.path` binds `os`.
    let imported = text.lines().any(|l| {
        l.trim_start().strip_prefix("import ").is_some_and(|rest| {
            rest.split(',').any(|m| {
                m.split_whitespace()
                    .next()
                    .and_then(|m| m.split('.').next())
                    == Some(name)
            })
        })
    });
    imported
        || text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + name.len()..]
                .trim_start_matches([' ', '\t'])
                .chars()
                .next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before)
                && !word(text[i + name.len()..].chars().next())
                && before != Some('.')
                && !matches!(after, Some('.' | '('))
        })
}

/// The text of `path` now, and the lines it had before the session (`originals`: none for
/// a file it created): `None` when it cannot be read, or its pre-image was too large to keep
/// (nothing is known of what the session wrote).
pub(crate) fn written(
    ws: &Workspace,
    path: &str,
    originals: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> Option<(String, BTreeSet<String>)> {
    let text = String::from_utf8(ws.read(path).ok().flatten()?).ok()?;
    let before = match originals.get(path)? {
        Some(b) => String::from_utf8_lossy(b)
            .lines()
            .map(str::to_owned)
            .collect(),
        None => BTreeSet::new(),
    };
    Some((text, before))
}

/// In each Python file of `changed` (paths, with their text before the session in
/// `originals`: `None` for a new file), the names a line the session wrote uses as
/// `name.attr` that the file never binds — a missing import. The 1.5B wrote
/// `type=lambda s: datetime.strptime(s, "%H:%M")` into logview.py without importing
/// datetime: the file parses, and the option fails with a NameError the moment it is used.
/// Also a line that was there before, when it uses a name the file bound before and the
/// session's change no longer binds: renaming strutil.py, the 1.5B turned report.py's
/// `import strutil` into `import text_utils` and left `strutil.title_case(text)` below it.
pub fn unbound(
    ws: &Workspace,
    changed: &BTreeSet<String>,
    originals: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in changed.iter().filter(|p| p.ends_with(".py")) {
        let Some((text, before)) = written(ws, path, originals) else {
            continue;
        };
        let before_text = match originals.get(path) {
            Some(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        for (k, line) in text.lines().enumerate() {
            let kept = before.contains(line);
            for name in dotted_names(line) {
                if BUILTIN_TYPES.contains(&name.as_str())
                    || seen.contains(&name)
                    || binds(&text, &name)
                {
                    continue;
                }
                let why = if !kept {
                    "never imports or defines"
                } else if binds(&before_text, &name) {
                    "no longer imports or defines since your change"
                } else {
                    continue;
                };
                out.push((
                    path.clone(),
                    format!("line {} uses {name}, which {path} {why}", k + 1),
                ));
                seen.push(name);
            }
        }
    }
    out
}

/// The dotted module a repository path names (`lib/strutil.py` → `lib.strutil`): `None`
/// for anything but a Python file whose every part is an identifier.
fn module_of(path: &str) -> Option<String> {
    let stem = path.strip_suffix(".py")?;
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    let dotted = stem.replace('/', ".");
    is_dotted(&dotted).then_some(dotted)
}

/// `line` with `old` (a dotted module name) written as `new` where it stands as the module
/// of an import (`import old`, `import a, old as b`, `from old import x`) or as `old.attr`
/// in code: not inside a longer dotted name, a string or a comment.
fn rename_module_in(line: &str, old: &str, new: &str) -> String {
    // Where the comment starts, outside strings.
    let mut quote: Option<char> = None;
    let mut comment = line.len();
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => {
                comment = i;
                break;
            }
            None => {}
        }
    }
    let joined = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    for (i, _) in line.match_indices(old) {
        let head = &line[..i];
        let before = head.chars().next_back();
        let after = line[i + old.len()..].chars().next();
        if i >= comment
            || joined(before)
            || before == Some('.')
            || joined(after)
            || head.matches('"').count() % 2 == 1
            || head.matches('\'').count() % 2 == 1
        {
            continue;
        }
        let statement = head.trim_start();
        let import = (statement.starts_with("import ")
            && (head.trim_end().ends_with("import") || head.trim_end().ends_with(',')))
            || statement == "from ";
        if import || after == Some('.') {
            out.push_str(&line[copied..i]);
            out.push_str(new);
            copied = i + old.len();
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// A module move the task asks for (`Rename the module strutil.py to text_utils.py`), done on
/// disk — the old file gone, the new one there — with imports of the old module left: each
/// Python file of the repository (tests included: nothing can import a module that is gone)
/// with those imports, and the `old.attr` uses below them, written for the new module.
/// The 1.5B moved strutil.py and left `import strutil` in report.py (session 22), or updated
/// one importer of three and said DONE; the broken import is certain, and so is its fix.
pub fn finish_moves(task: &str, ws: &Workspace) -> Vec<crate::renames::Finished> {
    let exists = |p: &str| {
        ws.resolve_nofollow(p)
            .ok()
            .is_some_and(|p| std::fs::symlink_metadata(p).is_ok())
    };
    let moves: Vec<(String, String)> = crate::asks::renames(task, ws)
        .into_iter()
        .filter(|(from, to)| !exists(from) && exists(to))
        .filter_map(|(from, to)| Some((module_of(&from)?, module_of(&to)?)))
        .collect();
    if moves.is_empty() {
        return Vec::new();
    }
    let files = ws.files("").unwrap_or_default();
    let mut out = Vec::new();
    for path in files.iter().filter(|p| p.ends_with(".py")).take(MAX_FILES) {
        let Some(text) = ws
            .read(path)
            .ok()
            .flatten()
            .filter(|b| b.len() as u64 <= MAX_BYTES)
            .and_then(|b| String::from_utf8(b).ok())
        else {
            continue;
        };
        let found = imports(&text);
        let mut renamed = Vec::new();
        let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
        for (old, new) in &moves {
            // Only a file that imports the old module has its `old.attr` uses rewritten.
            let imported = found.iter().any(|imp| imp.level == 0 && imp.module == *old);
            let as_module = found
                .iter()
                .any(|imp| imp.level == 0 && imp.module == *old && imp.names.is_empty());
            if !imported {
                continue;
            }
            let import_lines: BTreeSet<usize> = found
                .iter()
                .filter(|imp| imp.level == 0 && imp.module == *old)
                .map(|imp| imp.line)
                .collect();
            for (k, line) in lines.iter_mut().enumerate() {
                if !import_lines.contains(&(k + 1)) && !as_module {
                    continue;
                }
                let now = rename_module_in(line, old, new);
                if now != *line {
                    *line = now;
                    renamed.push(k + 1);
                }
            }
        }
        if renamed.is_empty() {
            continue;
        }
        renamed.sort_unstable();
        renamed.dedup();
        out.push(crate::renames::Finished {
            path: path.clone(),
            before: text.clone(),
            after: lines.concat(),
            renamed,
            restored: Vec::new(),
        });
    }
    out
}

/// `name` occurs in `text` as a whole identifier.
fn has_identifier(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// The observation text for `problems` (path, message).
pub fn describe(problems: &[(String, String)]) -> String {
    problems
        .iter()
        .map(|(path, why)| format!("{path} {why}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    #[test]
    fn a_name_a_new_line_uses_that_nothing_binds_is_a_missing_import() {
        const BEFORE: &str = "import argparse\n\n\ndef main(argv=None):\n    p = argparse.ArgumentParser()\n    return p\n";
        let after = "import argparse\n\n\ndef main(argv=None):\n    p = argparse.ArgumentParser()\n    p.add_argument(\"--since\", type=lambda s: datetime.strptime(s, \"%H:%M\"))\n    args = p.parse_args(argv)\n    print(args.since, str.upper(\"x\"), \"see notes.txt\")  # e.g. os.path\n    return p\n";
        let (_d, ws) = repo(&[("logview.py", after)]);
        let changed: BTreeSet<String> = ["logview.py".to_owned()].into();
        let originals = [("logview.py".to_owned(), Some(BEFORE.as_bytes().to_vec()))].into();
        let found = unbound(&ws, &changed, &originals);
        assert_eq!(
            found,
            [(
                "logview.py".to_owned(),
                "line 6 uses datetime, which logview.py never imports or defines".to_owned()
            )]
        );
        // Imported: nothing to say. A line that was there before is not the session's.
        let fixed = format!("from datetime import datetime\n{after}");
        let (_d, ws) = repo(&[("logview.py", &fixed)]);
        assert!(unbound(&ws, &changed, &originals).is_empty());
        let originals_after = [("logview.py".to_owned(), Some(after.as_bytes().to_vec()))].into();
        let (_d, ws) = repo(&[("logview.py", after)]);
        assert!(unbound(&ws, &changed, &originals_after).is_empty());
        // A line as it was, using an import the change took out.
        let report =
            "import strutil\n\n\ndef heading(text):\n    return strutil.title_case(text)\n";
        let renamed = report.replacen("import strutil", "import text_utils", 1);
        let (_d, ws) = repo(&[("report.py", &renamed)]);
        let report_changed: BTreeSet<String> = ["report.py".to_owned()].into();
        let report_before = [("report.py".to_owned(), Some(report.as_bytes().to_vec()))].into();
        assert_eq!(
            unbound(&ws, &report_changed, &report_before),
            [(
                "report.py".to_owned(),
                "line 5 uses strutil, which report.py no longer imports or defines since your change"
                    .to_owned()
            )]
        );
        let (_d, ws) = repo(&[("report.py", report)]);
        assert!(unbound(&ws, &report_changed, &report_before).is_empty());
        // `import os.path` binds os.
        let (_d, ws) = repo(&[("logview.py", "import os.path\nprint(os.path.join('a'))\n")]);
        let new_file = [("logview.py".to_owned(), None)].into();
        assert!(unbound(&ws, &changed, &new_file).is_empty());
    }

    #[test]
    fn a_module_moved_on_disk_has_its_imports_finished_everywhere() {
        let task =
            "Rename the module strutil.py to text_utils.py and update everything that imports it.";
        let report = "import strutil\n\n\ndef heading(text):\n    return strutil.title_case(text)  # strutil.x\n";
        let files = [
            ("text_utils.py", "def slugify(t):\n    return t\n"),
            (
                "app.py",
                "from strutil import slugify\nprint(slugify('a'), 'strutil.py')\n",
            ),
            ("report.py", report),
            (
                "test_strutil.py",
                "import os, strutil as s\nfrom strutil import (slugify)\n",
            ),
            ("other.py", "import mystrutil\nmystrutil.strutil.x = 1\n"),
        ];
        let (_d, ws) = repo(&files);
        let done = finish_moves(task, &ws);
        let got: Vec<(&str, &str, &[usize])> = done
            .iter()
            .map(|f| (f.path.as_str(), f.after.as_str(), f.renamed.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "app.py",
                    "from text_utils import slugify\nprint(slugify('a'), 'strutil.py')\n",
                    &[1][..]
                ),
                (
                    "report.py",
                    "import text_utils\n\n\ndef heading(text):\n    return text_utils.title_case(text)  # strutil.x\n",
                    &[1, 5][..]
                ),
                (
                    "test_strutil.py",
                    "import os, text_utils as s\nfrom text_utils import (slugify)\n",
                    &[1, 2][..]
                ),
            ]
        );
        // The old module still there (the move not done), or no move asked: nothing.
        let mut with_old = files.to_vec();
        with_old.push(("strutil.py", "def slugify(t):\n    return t\n"));
        let (_d, ws) = repo(&with_old);
        assert!(finish_moves(task, &ws).is_empty());
        let (_d, ws) = repo(&files);
        assert!(finish_moves("Fix the heading in report.py.", &ws).is_empty());
        // A package path moves as its dotted name.
        let (_d, ws) = repo(&[
            ("lib/text.py", "X = 1\n"),
            ("main.py", "import lib.strings\nprint(lib.strings.X)\n"),
        ]);
        let done = finish_moves("Move lib/strings.py to lib/text.py.", &ws);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].after, "import lib.text\nprint(lib.text.X)\n");
    }

    fn touched(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn import_lines_are_read_and_docstrings_are_not() {
        let text = "import os, a.b as c\nfrom ..pkg.m import (x, y as z)\nfrom . import w\n\
                    \"\"\"\nimport fake\n\"\"\"\n    from q import *  # all\n";
        let got: Vec<(usize, String, usize, Vec<String>)> = imports(text)
            .into_iter()
            .map(|i| (i.line, i.module, i.level, i.names))
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (1, "os".to_owned(), 0, vec![]),
                (1, "a.b".to_owned(), 0, vec![]),
                (2, "pkg.m".to_owned(), 2, s(&["x", "y"])),
                (3, String::new(), 1, s(&["w"])),
                (7, "q".to_owned(), 0, vec![]),
            ]
        );
    }

    #[test]
    fn a_moved_module_that_is_still_imported_is_named() {
        let (_d, ws) = repo(&[
            (
                "main.py",
                "import os\nimport helpers\nfrom lib.helpers import shout\n",
            ),
            ("lib/helpers.py", "def shout(s):\n    return s\n"),
        ]);
        let got = broken(&ws, &touched(&["helpers.py", "lib/helpers.py"]));
        assert_eq!(
            got,
            vec![(
                "main.py".to_owned(),
                "line 2 imports helpers, but helpers.py no longer exists".to_owned()
            )]
        );
        // Untouched by the session: never reported, whatever is missing.
        assert!(broken(&ws, &touched(&["other.py"])).is_empty());
        assert!(broken(&ws, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn a_new_import_of_a_module_the_package_lacks_is_named() {
        let (_d, ws) = repo(&[
            (
                "main.py",
                "from lib.helper import shout\nimport json\nimport numpy\n",
            ),
            ("lib/helpers.py", "def shout(s):\n    return s\n"),
        ]);
        let got = broken(&ws, &touched(&["main.py"]));
        assert_eq!(
            describe(&got),
            "main.py line 1 imports lib.helper, but the repository has no lib/helper.py"
        );
    }

    #[test]
    fn a_renamed_function_still_imported_by_its_old_name_is_named() {
        let (_d, ws) = repo(&[
            ("util.py", "def get_name(p):\n    return p['name']\n"),
            ("report.py", "from util import get_nme, get_name\n"),
            ("pkg/__init__.py", ""),
            ("pkg/sub.py", ""),
            ("app.py", "from pkg import sub\nfrom util import get_name\n"),
        ]);
        let got = broken(&ws, &touched(&["util.py"]));
        assert_eq!(
            got,
            vec![(
                "report.py".to_owned(),
                "line 1 imports get_nme from util, but util.py has no get_nme".to_owned()
            )]
        );
        // A submodule is a name a package has.
        assert!(broken(&ws, &touched(&["app.py"])).is_empty());
    }

    #[test]
    fn relative_imports_resolve_from_the_files_package() {
        let (_d, ws) = repo(&[
            ("pkg/__init__.py", ""),
            ("pkg/a.py", "from .b import f\nfrom . import c\n"),
            ("pkg/b.py", "def f():\n    pass\n"),
        ]);
        let got = broken(&ws, &touched(&["pkg/a.py", "pkg/c.py"]));
        assert_eq!(
            got,
            vec![(
                "pkg/a.py".to_owned(),
                "line 2 imports c from ., but pkg/__init__.py has no c".to_owned()
            )]
        );
    }
}
