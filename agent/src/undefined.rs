//! Names a Python file uses and nothing binds, since the session changed it. The 0.5B, asked
//! to rename a setting, rewrote health.py's main block as `cfg = config.load(path)` with no
//! `path` anywhere in the file: it parses, the task's check never runs that block, and the
//! program fails with a NameError the first time it is started. [`crate::imports::unbound`]
//! reads only `name.attr` uses from the text; this asks Python's own compiler.
//!
//! `python3`'s `symtable` resolves every name of every scope the way the interpreter will: a
//! name a function or the module reads that is global there, and that the module never
//! assigns, imports or defines (nor a function declares `global` and assigns), and that is
//! no builtin, is a NameError waiting for its line to run. Nothing is executed. The file's
//! text before the session gets the same question, and only names that were bound then (or
//! whose file is new) are reported — a name that was already undefined is not the session's
//! doing. A file with `from m import *` or a `globals()` call can bind anything and is never
//! judged; a file that does not parse is the syntax check's ([`crate::lint`]).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::workspace::Workspace;

/// Reads `{"before": text or null, "after": text}` on stdin; prints `name line kind` for each
/// name `after` reads that no scope binds and `before` did not also leave unbound (`module`
/// where a line reads an attribute of it, a missing import; else `value`), and exits 1 when
/// there is one. Exits 0 on a file it will not judge.
const PYTHON: &str = r#"import ast, builtins, json, symtable, sys

MODULE_NAMES = {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                "__builtins__", "__path__", "__annotations__", "__cached__", "__debug__"}

def undefined(src):
    try:
        tree = ast.parse(src)
        top = symtable.symtable(src, "<file>", "exec")
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("globals", "exec", "eval", "vars"):
            return None
    bound = set(dir(builtins)) | MODULE_NAMES
    read = set()
    def walk(table, module):
        for s in table.get_symbols():
            name = s.get_name()
            if module:
                if s.is_assigned() or s.is_imported() or s.is_namespace():
                    bound.add(name)
                if s.is_referenced():
                    read.add(name)
            elif s.is_global():
                if s.is_declared_global() and s.is_assigned():
                    bound.add(name)
                if s.is_referenced():
                    read.add(name)
        for child in table.get_children():
            walk(child, False)
    walk(top, True)
    missing = read - bound
    lines = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in missing:
            lines[node.id] = min(lines.get(node.id, node.lineno), node.lineno)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            dotted.add(node.value.id)
    return lines

dotted = set()

given = json.load(sys.stdin)
after = undefined(given["after"])
if not after:
    sys.exit(0)
before = {} if given["before"] is None else undefined(given["before"])
if before is None:
    sys.exit(0)
found = sorted((line, name) for name, line in after.items() if name not in before)
for line, name in found:
    print(name, line, "module" if name in dotted else "value")
sys.exit(1 if found else 0)
"#;

/// A name a line reads that the file leaves unbound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undefined {
    pub path: String,
    pub name: String,
    /// 1-based: the first line that reads it.
    pub line: usize,
    /// Some line reads an attribute of it (`sys.argv`): an import is what is missing.
    pub module: bool,
}

impl Undefined {
    /// What the observation says.
    pub fn describe(&self) -> String {
        format!(
            "line {} uses {}, which {} never assigns, imports or defines (a NameError when \
             that line runs)",
            self.line, self.name, self.path
        )
    }
}

/// The names `after`, the text of `path`, reads that nothing binds and that `before` (its
/// text before the session; `None` for a new file) did not also leave unbound. Empty when
/// `python3` is missing, a text does not parse, or the file cannot be judged.
pub fn newly_undefined(path: &str, before: Option<&str>, after: &str) -> Vec<Undefined> {
    let input = serde_json::json!({ "before": before, "after": after }).to_string();
    let Some(out) = crate::lint::run(
        Command::new("python3").args(["-c", PYTHON]),
        input.as_bytes(),
    ) else {
        return Vec::new();
    };
    out.lines()
        .filter_map(|l| {
            let mut words = l.split(' ');
            let (name, line, kind) = (words.next()?, words.next()?, words.next()?);
            let line = line.parse().ok()?;
            let ident = !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            ident.then(|| Undefined {
                path: path.to_owned(),
                name: name.to_owned(),
                line,
                module: kind == "module",
            })
        })
        .collect()
}

/// [`newly_undefined`] for each Python file of `changed` whose text before the session
/// `originals` holds (`None`: a file the session created).
pub fn in_changed(
    ws: &Workspace,
    changed: &BTreeSet<String>,
    originals: &BTreeMap<String, Option<Vec<u8>>>,
) -> Vec<Undefined> {
    let mut out = Vec::new();
    for path in changed.iter().filter(|p| p.ends_with(".py")) {
        let Some(before) = originals.get(path) else {
            continue;
        };
        let Some(after) = ws
            .read(path)
            .ok()
            .flatten()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            continue;
        };
        let before = before
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned());
        out.extend(newly_undefined(path, before.as_deref(), &after));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    const HEALTH: &str = "\"\"\"How long a full health check may take.\"\"\"\n\nimport sys\n\nimport config\n\nENDPOINTS = [\"/health\"]\n\n\ndef worst_case_seconds(cfg):\n    attempts = 1 + cfg[\"retries\"]\n    return len(ENDPOINTS) * attempts * cfg.get(\"timeout\", 10)\n\n\nif __name__ == \"__main__\":\n    cfg = config.load(*sys.argv[1:2])\n    print(worst_case_seconds(cfg))\n";

    #[test]
    fn a_bare_name_the_change_left_unbound_is_named_with_its_line() {
        if !crate::testing::prereq::python3() {
            return;
        }
        // The 0.5B's main block: `path` bound nowhere.
        let after = HEALTH.replace("config.load(*sys.argv[1:2])", "config.load(path)");
        assert_eq!(
            newly_undefined("health.py", Some(HEALTH), &after),
            [Undefined {
                path: "health.py".to_owned(),
                name: "path".to_owned(),
                line: 16,
                module: false,
            }]
        );
        // Its imports and module constant dropped: each name the file still reads.
        let body = &HEALTH[HEALTH.find("def ").unwrap()..];
        let found: Vec<(String, usize, bool)> = newly_undefined("health.py", Some(HEALTH), body)
            .into_iter()
            .map(|u| (u.name, u.line, u.module))
            .collect();
        assert_eq!(
            found,
            [
                ("ENDPOINTS".to_owned(), 3, false),
                ("config".to_owned(), 7, true),
                ("sys".to_owned(), 7, true)
            ]
        );
        // The file as it was, and a correct change: nothing.
        assert!(newly_undefined("health.py", Some(HEALTH), HEALTH).is_empty());
        let renamed = HEALTH.replace("\"timeout\"", "\"timeout_seconds\"");
        assert!(newly_undefined("health.py", Some(HEALTH), &renamed).is_empty());
    }

    #[test]
    fn every_way_python_binds_a_name_counts_and_old_gaps_are_not_the_sessions() {
        if !crate::testing::prereq::python3() {
            return;
        }
        let bound = "import os.path as p\nfrom json import loads as parse\ntry:\n    import yaml\nexcept ImportError as err:\n    yaml = None\n\nCOUNT = 0\n\n\ndef bump(n=1, *rest, **kw):\n    global COUNT, LAST\n    COUNT += n\n    LAST = [x for x in rest if x]\n    for i, (a, b) in enumerate(kw.items()):\n        print(i, a, b, __name__, __file__)\n    with open(p.join('a')) as f:\n        data = parse(f.read())\n    if (m := len(data)) > 1:\n        return m, LAST, yaml, err\n    return lambda y: y + COUNT\n\n\nclass Box:\n    size = 3\n\n    def area(self):\n        return self.size * Box.size * int('2')\n\n\nprint(bump(), Box().area())\n";
        assert!(
            newly_undefined("a.py", None, bound).is_empty(),
            "{:?}",
            newly_undefined("a.py", None, bound)
        );
        // A new file: every unbound name counts; a name only read in a function body counts.
        let new = "def total(rows):\n    return sum(r.price for r in rows) * RATE\n";
        let names: Vec<String> = newly_undefined("a.py", None, new)
            .into_iter()
            .map(|u| u.name)
            .collect();
        assert_eq!(names, ["RATE"]);
        // Already unbound before the session: not held against it.
        let older = format!("{new}\n\nprint(total([]))\n");
        assert!(newly_undefined("a.py", Some(new), &older).is_empty());
        // A star import or globals() can bind anything: never judged. Nor a file that does
        // not parse (the syntax check says that).
        assert!(newly_undefined("a.py", None, &format!("from m import *\n{new}")).is_empty());
        assert!(newly_undefined("a.py", None, &format!("{new}globals()['RATE'] = 2\n")).is_empty());
        assert!(newly_undefined("a.py", None, "def f(:\n    return RATE\n").is_empty());
    }

    #[test]
    fn only_changed_python_files_with_a_known_pre_image_are_read() {
        if !crate::testing::prereq::python3() {
            return;
        }
        let after = HEALTH.replace("config.load(*sys.argv[1:2])", "config.load(path)");
        let (_d, ws) = repo(&[
            ("health.py", &after),
            ("notes.txt", "path"),
            ("other.py", "print(path)\n"),
        ]);
        let changed: BTreeSet<String> = ["health.py", "notes.txt"]
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        let originals: BTreeMap<String, Option<Vec<u8>>> =
            [("health.py".to_owned(), Some(HEALTH.as_bytes().to_vec()))].into();
        let found = in_changed(&ws, &changed, &originals);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].describe(),
            "line 16 uses path, which health.py never assigns, imports or defines (a NameError \
             when that line runs)"
        );
        // No pre-image kept: nothing is known of what the session wrote.
        assert!(in_changed(&ws, &changed, &BTreeMap::new()).is_empty());
    }
}
