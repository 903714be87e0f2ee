//! What a Python file runs when it is imported, told in the first message where the task is
//! about it. A task like "importing textstats.py prints its demo; make the demo run only when
//! the file is run directly" asks for Python's `if __name__ == "__main__":` block; the 1.5B,
//! shown the files and the task, wrote them back unchanged or deleted the demo, turn after
//! turn, in all four attempts (benches/README.md, session 27). A model that small knows the
//! idiom when it is named, not when it is described.
//!
//! Where the task speaks of importing and of running, printing or a script, each Python file
//! the task names whose top level does more than define (a call, a loop, a `print`: not a
//! `def`, `class`, import, docstring or an assignment before the last definition) and has no
//! `__name__` check is told with those lines, numbered, and the idiom. Python's own parser
//! (`ast` in `python3`, nothing run) finds the statements; without `python3` nothing is said.

use std::process::Command;

use crate::workspace::Workspace;

/// Reads Python source on stdin; prints one JSON line `[[kind, first, last], …]` of its
/// top-level statements (`def`, `import`, `doc`, `assign`, `guard`, `other`) and exits 1
/// (what [`crate::lint::run`] returns output for); exits 0 on a file that does not parse.
const PYTHON: &str = r#"import ast, json, sys
try:
    tree = ast.parse(sys.stdin.buffer.read())
except (SyntaxError, ValueError):
    sys.exit(0)
def kind(i, node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "def"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import"
    if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str):
        return "doc"
    if isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                        for n in ast.walk(node.test)):
        return "guard"
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "assign"
    return "other"
out = []
for i, node in enumerate(tree.body):
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    out.append([kind(i, node), first, node.end_lineno or node.lineno])
print(json.dumps(out))
sys.exit(1)
"#;

/// Task words that speak of importing.
const IMPORT_WORDS: &[&str] = &["import", "imports", "imported", "importing"];

/// Task words that speak of what a file does when it runs.
const RUN_WORDS: &[&str] = &[
    "directly", "script", "run", "runs", "ran", "running", "print", "prints", "printed",
    "printing", "output", "outputs", "demo", "main", "__main__", "guard", "side", "effect",
    "effects",
];

/// The first message's note: for each Python file `task` names that runs code on import,
/// the lines it runs and the idiom that keeps them for a direct run. `None` where the task
/// does not speak of importing and running, or no named file qualifies.
pub fn note(task: &str, ws: &Workspace) -> Option<String> {
    let words: Vec<String> = task
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if !has(IMPORT_WORDS) || !has(RUN_WORDS) {
        return None;
    }
    let mut out = String::new();
    for (path, text) in crate::targets::named_texts(task, ws) {
        let path = path.as_str();
        if !path.ends_with(".py") || !imported(task, ws, path) {
            continue;
        }
        let Some(statements) = top_level(&text) else {
            continue;
        };
        let Some(lines) = runs_on_import(&statements) else {
            continue;
        };
        let all: Vec<&str> = text.lines().collect();
        let mut shown = String::new();
        for &(first, last) in &lines {
            for n in first..=last.min(all.len()) {
                shown.push_str(&format!("{n:>4}  {}\n", all[n - 1]));
            }
        }
        let stem = path.rsplit('/').next().unwrap_or(path);
        let stem = stem.strip_suffix(".py").unwrap_or(stem);
        out.push_str(&format!(
            "{path} runs these top-level lines every time it is imported (`import {stem}`), \
             not only when it is run directly:\n```\n{shown}```\nPython code that should \
             run only when the file is run directly (`python3 {path}`) goes at the end of the \
             file, indented under `if __name__ == \"__main__\":`; the functions stay where \
             they are.\n"
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// Whether `path` is imported: the task says so (`importing textstats.py`, `import
/// textstats`), or another Python file of the repository imports its module by name.
fn imported(task: &str, ws: &Workspace, path: &str) -> bool {
    let module = path.strip_suffix(".py").unwrap_or(path).replace('/', ".");
    let stem = module.rsplit('.').next().unwrap_or(&module).to_owned();
    let words: Vec<String> = task
        .split_whitespace()
        .map(|w| {
            crate::targets::bare(w)
                .trim_end_matches(".py")
                .to_lowercase()
        })
        .collect();
    let said = words.windows(2).any(|p| {
        IMPORT_WORDS.contains(&p[0].as_str()) && (p[1] == stem.to_lowercase() || p[1] == module)
    });
    if said {
        return true;
    }
    let names = |line: &str| -> bool {
        let line = line.trim_start();
        let rest = if let Some(r) = line.strip_prefix("import ") {
            r
        } else if let Some(r) = line.strip_prefix("from ") {
            r.split(" import").next().unwrap_or_default()
        } else {
            return false;
        };
        rest.split(',')
            .map(|m| m.split_whitespace().next().unwrap_or_default())
            .any(|m| m == module || m == stem || m.ends_with(&format!(".{stem}")))
    };
    ws.files("")
        .unwrap_or_default()
        .iter()
        .filter(|f| f.ends_with(".py") && f.as_str() != path)
        .take(500)
        .filter_map(|f| ws.read(f).ok().flatten())
        .any(|t| String::from_utf8_lossy(&t).lines().any(names))
}

/// One top-level statement: its kind and its first and last line (1-based).
type Statement = (String, usize, usize);

/// The top-level statements of `text` as Python's parser reads them; `None` where it does
/// not parse or `python3` cannot run.
fn top_level(text: &str) -> Option<Vec<Statement>> {
    let out = crate::lint::run(
        Command::new("python3").args(["-I", "-c", PYTHON]),
        text.as_bytes(),
    )?;
    let parsed: Vec<(String, usize, usize)> = serde_json::from_str(out.lines().next()?).ok()?;
    Some(parsed)
}

/// The line ranges a file with `statements` runs on import beyond its definitions: every
/// statement that is neither a definition, an import, a docstring nor an assignment, and
/// the assignments after the last definition where such a statement follows them (a demo's
/// input). `None` where there is none, or the file already checks `__name__`.
fn runs_on_import(statements: &[Statement]) -> Option<Vec<(usize, usize)>> {
    if statements.iter().any(|(k, _, _)| k == "guard") {
        return None;
    }
    let last_def = statements.iter().rposition(|(k, _, _)| k == "def");
    let last_other = statements.iter().rposition(|(k, _, _)| k == "other")?;
    let lines = statements
        .iter()
        .enumerate()
        .filter(|(i, (k, _, _))| {
            k == "other" || (k == "assign" && last_def.is_some_and(|d| *i > d) && *i < last_other)
        })
        .map(|(_, (_, a, b))| (*a, *b))
        .collect();
    Some(lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn st(k: &str, a: usize, b: usize) -> Statement {
        (k.to_owned(), a, b)
    }

    #[test]
    fn a_demo_after_the_definitions_is_told_with_its_input() {
        let s = [
            st("import", 1, 1),
            st("assign", 3, 3),
            st("def", 5, 6),
            st("def", 9, 10),
            st("assign", 13, 13),
            st("other", 14, 14),
            st("other", 15, 15),
        ];
        assert_eq!(runs_on_import(&s), Some(vec![(13, 13), (14, 14), (15, 15)]));
    }

    #[test]
    fn definitions_constants_and_guarded_files_are_not_told() {
        let plain = [
            st("doc", 1, 1),
            st("assign", 2, 2),
            st("def", 4, 5),
            st("assign", 7, 7),
        ];
        assert_eq!(runs_on_import(&plain), None);
        let guarded = [st("def", 1, 2), st("other", 3, 3), st("guard", 5, 6)];
        assert_eq!(runs_on_import(&guarded), None);
    }

    const STATS: &str = "import sys\n\n\ndef word_count(text):\n    return len(text.split())\n\n\ntext = \" \".join(sys.argv[1:]) or \"the fox\"\nprint(\"words:\",\n      word_count(text))\n";

    #[test]
    fn the_note_names_the_lines_and_the_idiom() {
        if !crate::testing::prereq::python3() {
            return;
        }
        let (_d, ws) = crate::testing::repo(&[
            ("textstats.py", STATS),
            (
                "report.py",
                "from textstats import word_count\nprint(word_count('a'))\n",
            ),
            (
                "lib.py",
                "import sys\n\nLIMIT = 3\n\n\ndef f():\n    print(sys.argv)\n",
            ),
        ]);
        let task = "Importing textstats.py prints its demo. Make the demo run only when textstats.py is run directly.";
        let n = note(task, &ws).unwrap();
        assert!(
            n.starts_with("textstats.py runs these top-level lines"),
            "{n}"
        );
        assert!(n.contains("   8  text = \" \".join(sys.argv[1:]) or \"the fox\"\n   9  print(\"words:\",\n  10        word_count(text))\n"), "{n}");
        assert!(n.contains("if __name__ == \"__main__\":"), "{n}");
        assert!(!n.contains("def word_count"), "{n}");
        // Imported by report.py, though the task does not say "importing textstats.py".
        let other = "textstats.py prints when report.py imports it; print only on a direct run.";
        assert!(note(other, &ws).is_some_and(|n| n.starts_with("textstats.py runs")));
        // report.py, named too, is imported by nothing: not told.
        assert!(!n.contains("report.py"), "{n}");
        // Said once, though the task names the file twice.
        assert_eq!(n.matches("runs these top-level lines").count(), 1);
        // A task that does not speak of importing, a file not named, a guarded file, a
        // file that does not parse: nothing.
        assert_eq!(note("Make textstats.py print the count first.", &ws), None);
        assert_eq!(note("Importing lib.py runs the demo; fix it.", &ws), None);
        let guarded = format!("{STATS}\nif __name__ == \"__main__\":\n    pass\n");
        let (_d, ws) = ws_guarded(&guarded);
        assert_eq!(note(task, &ws), None);
        let (_d, ws) = ws_guarded("def f(:\n");
        assert_eq!(note(task, &ws), None);
    }

    fn ws_guarded(text: &str) -> (tempfile::TempDir, Workspace) {
        crate::testing::repo(&[("textstats.py", text)])
    }

    #[test]
    fn a_file_nothing_imports_is_told_only_where_the_task_says_it_is_imported() {
        if !crate::testing::prereq::python3() {
            return;
        }
        let (_d, ws) = ws_guarded(STATS);
        let said = "Importing textstats.py runs its demo; run it only when the file runs directly.";
        assert!(note(said, &ws).is_some());
        let unsaid = "textstats.py runs its demo; the import of sys is fine; run it directly.";
        assert_eq!(note(unsaid, &ws), None);
    }
}
