//! The first user message's start context, found without a model call: a repository map and
//! the files the task points at (named, imported or sourced by a named file, or holding identifiers from
//! the task). Both protocols build on it: the text protocol shows excerpts numbered like
//! READ's ([`task_message`]), the whole protocol whole files (its own module).

use std::fmt::Write;

use crate::workspace::Workspace;

/// Characters of the first message's start context by default ([`task_message`]).
pub const DEFAULT_CONTEXT_BUDGET: usize = 6000;

/// Files larger than this are neither outlined nor shown in the start context.
const CONTEXT_FILE_BYTES: usize = 256 * 1024;

/// Names an outline shows per file before "…".
const OUTLINE_NAMES: usize = 8;

/// Files whose contents the start context shows at most.
const CONTEXT_FILES: usize = 6;

/// Lines of a file shown in the start context when it is not shown whole: fewer is no help.
const CONTEXT_MIN_LINES: usize = 5;

/// Imports followed from a file the task names: its modules, and theirs.
const IMPORT_HOPS: usize = 2;

/// Lines shown before the line a partly shown file is focused on.
const CONTEXT_LEAD: usize = 5;

/// The first user message: the task, then a start context of at most `budget` characters
/// found without a model call — a repository map (each file with its size and, for Python,
/// shell and Rust files, the names it defines), then the contents, numbered like READ's,
/// of the files the task names and of those where identifiers from the task occur (the
/// file defining one first). Deterministic: the same tree and task give the same message.
pub fn task_message(ws: &Workspace, task: &str, budget: usize) -> String {
    let files = repository_files(ws);
    let relevant = relevant_files(task, &files);
    // With files to show, the map takes at most a quarter of the budget.
    let map_budget = if relevant.is_empty() {
        budget
    } else {
        budget / 4
    };
    let map = repository_map(&files, map_budget);
    let shown = file_contents(&files, &relevant, budget.saturating_sub(map.len()));
    format!("Task: {task}\n\n{map}{shown}")
}

/// Every file of the repository with its text (`None` when binary or larger than
/// [`CONTEXT_FILE_BYTES`]) and its size in bytes, in the workspace's order.
pub(crate) fn repository_files(ws: &Workspace) -> Vec<(String, Option<String>, u64)> {
    ws.files("")
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let size = ws
                .resolve(&f)
                .ok()
                .and_then(|p| std::fs::symlink_metadata(p).ok())
                .map_or(0, |m| m.len());
            let text = (size as usize <= CONTEXT_FILE_BYTES)
                .then(|| ws.read(&f).ok().flatten())
                .flatten()
                .and_then(|b| String::from_utf8(b).ok());
            (f, text, size)
        })
        .collect()
}

/// The map: `Repository files (N):`, then one line per file while `budget` lasts: its path,
/// size, and outline when there is room.
pub(crate) fn repository_map(files: &[(String, Option<String>, u64)], budget: usize) -> String {
    let mut s = format!("Repository files ({}):\n", files.len());
    // Room kept for the closing "… and N more" line.
    let reserve = 48;
    for (k, (path, text, size)) in files.iter().enumerate() {
        let size = match text {
            Some(t) => format!("{} lines", t.lines().count()),
            None => format!("{size} bytes"),
        };
        let bare = format!("{path} ({size})\n");
        let names = text
            .as_deref()
            .map(|t| outline(path, t))
            .unwrap_or_default();
        let full = match names.is_empty() {
            true => bare.clone(),
            false => format!("{path} ({size}): {}\n", names.join(", ")),
        };
        let last = k + 1 == files.len();
        let room = |line: &str| s.len() + line.len() + if last { 0 } else { reserve } <= budget;
        if room(&full) {
            s.push_str(&full);
        } else if room(&bare) {
            s.push_str(&bare);
        } else {
            let _ = writeln!(s, "… and {} more (use GLOB or LIST)", files.len() - k);
            break;
        }
    }
    s
}

/// The names a file defines, by a line scan: `def`/`class` in Python, functions in shell,
/// `fn`/`struct`/`enum`/`trait`/`mod` in Rust. At most [`OUTLINE_NAMES`], then "…".
fn outline(path: &str, text: &str) -> Vec<String> {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    let keywords: &[&str] = match ext {
        "py" => &["def", "class"],
        "rs" => &["fn", "struct", "enum", "trait", "mod"],
        "sh" | "bash" => &["function"],
        _ => return Vec::new(),
    };
    let mut names = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let found = match words.as_slice() {
            // A shell function: `name() {` or `function name`.
            [name, ..] if matches!(ext, "sh" | "bash") && line.starts_with(name) => line
                [name.len()..]
                .trim_start()
                .starts_with("()")
                .then(|| format!("{name}()")),
            _ => words.windows(2).find_map(|w| {
                let lead = &line[..line.find(w[0]).unwrap_or(0)];
                let leading_only = lead.trim().is_empty()
                    || ["pub", "pub(crate)", "async", "export"]
                        .iter()
                        .any(|m| lead.trim() == *m);
                (keywords.contains(&w[0]) && (leading_only || ext == "rs"))
                    .then(|| format!("{} {}", w[0], w[1]))
            }),
        };
        if let Some(n) = found {
            if names.len() == OUTLINE_NAMES {
                names.push("…".to_owned());
                break;
            }
            names.push(n);
        }
    }
    names
}

/// Why a file named in the task is in the start context.
const NAMED: &str = "named in the task";

/// Why a file is in the start context, and the line to focus on when it is not shown whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Relevant {
    pub(crate) path: String,
    why: String,
    focus: usize,
    /// Imports followed to reach it from a named file (0 for a named file).
    hops: usize,
}

/// The files the task names (a path, or a file name, in the order the task names them),
/// the Python modules they import and the shell files they source (up to [`IMPORT_HOPS`] deep), then those where identifiers from the task occur, most relevant first: a definition
/// counts ten, each other use one (at most five per identifier); ties by path.
pub(crate) fn relevant_files(task: &str, files: &[(String, Option<String>, u64)]) -> Vec<Relevant> {
    let words = task_words(task);
    let mut out: Vec<Relevant> = Vec::new();
    for (w, _) in &words {
        for (path, text, _) in files {
            let base = path.rsplit('/').next().unwrap_or(path);
            let named =
                w == path || (w.contains('.') && w == base) || path.ends_with(&format!("/{w}"));
            if named && text.is_some() && !out.iter().any(|r| &r.path == path) {
                out.push(Relevant {
                    path: path.clone(),
                    why: NAMED.to_owned(),
                    focus: 0,
                    hops: 0,
                });
            }
        }
    }
    let named = |w: &str| {
        out.iter()
            .any(|r| r.path == w || r.path.ends_with(&format!("/{w}")))
    };
    let mut idents: Vec<String> = Vec::new();
    for (w, code) in &words {
        if !code || named(w) {
            continue;
        }
        for part in w.split('.') {
            let ident = part.trim_end_matches("()");
            let valid = ident.len() >= 3
                && ident.starts_with(|c: char| c.is_alphabetic() || c == '_')
                && ident.chars().all(|c| c.is_alphanumeric() || c == '_');
            if valid && !idents.iter().any(|i| i == ident) {
                idents.push(ident.to_owned());
            }
        }
    }
    // The modules named files import (and those they import) come next: the bug a failing
    // test names is often one import away.
    let mut k = 0;
    while k < out.len() && out.len() < CONTEXT_FILES {
        let importer = out[k].path.clone();
        let text = files.iter().find(|(p, _, _)| *p == importer);
        let hops = out[k].hops + 1;
        if let Some((_, Some(text), _)) = text
            && hops <= IMPORT_HOPS
        {
            let mut modules = python_imports(&importer, text);
            modules.extend(shell_sources(&importer, text));
            for module in modules {
                let found = files.iter().find(|(p, t, _)| *p == module && t.is_some());
                if found.is_some() && !out.iter().any(|r| r.path == module) {
                    out.push(Relevant {
                        path: module,
                        why: match importer.ends_with(".py") {
                            true => format!("imported by {importer}"),
                            false => format!("sourced by {importer}"),
                        },
                        focus: 0,
                        hops,
                    });
                }
            }
        }
        k += 1;
    }
    // A named file is focused on what the task's identifiers point at in it, too.
    for r in &mut out {
        let text = files.iter().find(|(p, _, _)| *p == r.path);
        if let Some((path, Some(text), _)) = text {
            r.focus = identifier_hits(path, text, &idents).focus;
        }
    }
    let mut scored: Vec<(usize, Relevant)> = Vec::new();
    for (path, text, _) in files {
        let Some(text) = text else { continue };
        if out.iter().any(|r| &r.path == path) {
            continue;
        }
        let hits = identifier_hits(path, text, &idents);
        if hits.score > 0 {
            let why = match hits.defines.is_empty() {
                true => "uses identifiers from the task".to_owned(),
                false => format!("defines {}", hits.defines.join(", ")),
            };
            scored.push((
                hits.score,
                Relevant {
                    path: path.clone(),
                    why,
                    focus: hits.focus,
                    hops: 0,
                },
            ));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
    out.extend(scored.into_iter().map(|(_, r)| r));
    out
}

/// Narrows `relevant` ([`relevant_files`]) to the files the task points at: those it names,
/// what they import or source, and those that define its identifiers (a file that only uses
/// one is left out); test files after the others, each group in its order. `false`, and
/// `relevant` untouched, when none is left.
pub(crate) fn focus(relevant: &mut Vec<Relevant>) -> bool {
    let pointed: Vec<Relevant> = relevant
        .iter()
        .filter(|r| r.hops > 0 || r.why == NAMED || r.why.starts_with("defines "))
        .cloned()
        .collect();
    if pointed.is_empty() {
        return false;
    }
    let test = |r: &Relevant| crate::probe::is_test(&[format!("./{}", r.path)]);
    let (tests, sources): (Vec<Relevant>, Vec<Relevant>) = pointed.into_iter().partition(test);
    *relevant = sources.into_iter().chain(tests).collect();
    true
}

/// The repository paths a Python file's `import a.b` and `from a.b import c` lines may
/// name: `a/b.py` and `a/b/__init__.py`, relative to the root and to the file's directory.
fn python_imports(path: &str, text: &str) -> Vec<String> {
    if !path.ends_with(".py") {
        return Vec::new();
    }
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let modules: Vec<&str> = match words.as_slice() {
            ["from", m, "import", ..] => vec![*m],
            ["import", rest @ ..] => rest
                .iter()
                .map(|m| m.trim_end_matches(','))
                .take_while(|m| *m != "as")
                .collect(),
            _ => continue,
        };
        for m in modules {
            let rel = m.trim_start_matches('.').replace('.', "/");
            if rel.is_empty() {
                continue;
            }
            for base in [String::new(), format!("{dir}/")] {
                for candidate in [
                    format!("{base}{rel}.py"),
                    format!("{base}{rel}/__init__.py"),
                ] {
                    let candidate = candidate.trim_start_matches('/').to_owned();
                    if !out.contains(&candidate) {
                        out.push(candidate);
                    }
                }
            }
        }
    }
    out
}

/// The repository paths a shell script's `. FILE` and `source FILE` lines may name,
/// relative to the root and to the script's directory. A path built from a variable or a
/// command substitution (`"$(dirname "$0")/lib.sh"`, `$DIR/lib.sh`) is read from its last
/// literal `/`: the script's own directory is what such prefixes almost always spell.
fn shell_sources(path: &str, text: &str) -> Vec<String> {
    let shebang = text
        .lines()
        .next()
        .is_some_and(|l| l.starts_with("#!") && (l.contains("sh") || l.contains("bash")));
    if !(path.ends_with(".sh") || path.ends_with(".bash") || shebang) {
        return Vec::new();
    }
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line
            .strip_prefix(". ")
            .or_else(|| line.strip_prefix("source "))
        else {
            continue;
        };
        // The argument: up to a command separator or a comment.
        let arg = rest.split([';', '&', '|', '#']).next().unwrap_or("").trim();
        let arg = match arg.rfind('$') {
            Some(at) => match arg[at..].find('/') {
                Some(slash) => &arg[at + slash + 1..],
                None => continue,
            },
            None => arg,
        };
        let arg = arg.trim_matches(|c| c == '"' || c == '\'');
        if arg.is_empty() || arg.starts_with('/') || arg.contains(['$', '`', '*', ' ', '"']) {
            continue;
        }
        for base in [dir, ""] {
            let Some(candidate) = joined(base, arg) else {
                continue;
            };
            if !out.contains(&candidate) {
                out.push(candidate);
            }
        }
    }
    out
}

/// `rel` joined to the directory `dir`, `.` and `..` resolved; `None` when it climbs out.
fn joined(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// What a file holds of the task's identifiers.
struct Hits<'i> {
    /// Ten per identifier the file defines, one per use (at most five per identifier).
    score: usize,
    /// The identifiers it defines.
    defines: Vec<&'i str>,
    /// The line (from 0) of its first definition, else of its first use, else 0.
    focus: usize,
}

fn identifier_hits<'i>(path: &str, text: &str, idents: &'i [String]) -> Hits<'i> {
    let shell = path.ends_with(".sh") || path.ends_with(".bash");
    let (mut score, mut defines) = (0, Vec::new());
    let (mut def_at, mut use_at) = (None, None);
    for ident in idents {
        let (mut uses, mut def) = (0, None);
        for (i, line) in text.lines().enumerate() {
            for at in occurrences(line, ident) {
                let before = line[..at].trim_end();
                let keyword = before.rsplit(|c: char| c.is_whitespace()).next();
                // `def name`, `fn name`, …; at a line's start `NAME = …` or `NAME: …`, and
                // in shell `name() {`.
                let rest = line[at + ident.len()..].trim_start();
                let is_def = keyword.is_some_and(|k| DEF_KEYWORDS.contains(&k))
                    || (at == 0
                        && ((rest.starts_with('=') && !rest.starts_with("=="))
                            || rest.starts_with(':')
                            || (shell && rest.starts_with("()"))));
                if is_def && def.is_none() {
                    def = Some(i);
                }
                uses += 1;
                use_at.get_or_insert(i);
            }
        }
        if let Some(d) = def {
            score += 10;
            defines.push(ident.as_str());
            def_at.get_or_insert(d);
        }
        score += uses.min(5);
    }
    Hits {
        score,
        defines,
        focus: def_at.or(use_at).unwrap_or(0),
    }
}

/// Words before a name that define it (Python, Rust, shell, JavaScript).
const DEF_KEYWORDS: &[&str] = &[
    "def", "class", "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "function",
    "let", "var",
];

/// The task's words with punctuation trimmed, each with whether it looks like code:
/// `backticked`, snake_case, CamelCase or camelCase, dotted, or called (`name()`).
fn task_words(task: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for (k, span) in task.split('`').enumerate() {
        // Odd pieces are between backticks.
        let quoted = k % 2 == 1;
        for raw in span.split_whitespace() {
            let w = raw.trim_matches(|c: char| {
                !(c.is_alphanumeric() || c == '_' || c == '/' || c == '.' || c == '-')
            });
            let w = w.trim_end_matches('.');
            if w.is_empty() {
                continue;
            }
            let chars: Vec<char> = w.chars().collect();
            let camel = chars
                .windows(2)
                .any(|p| p[0].is_lowercase() && p[1].is_uppercase());
            let code = quoted
                || w.contains('_')
                || camel
                || raw.contains("()")
                || (w.contains('.') && !w.starts_with('.'));
            if !out.iter().any(|(o, _)| o == w) {
                out.push((w.to_owned(), code));
            }
        }
    }
    out
}

/// Byte offsets where `ident` occurs in `line` as a whole word.
fn occurrences(line: &str, ident: &str) -> Vec<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    line.match_indices(ident)
        .map(|(i, _)| i)
        .filter(|&i| {
            !word(line[..i].chars().next_back()) && !word(line[i + ident.len()..].chars().next())
        })
        .collect()
}

/// The relevant files' contents, numbered like READ's, within `budget` characters: each
/// whole when it fits, else the lines around its focus that fit; the rest only named.
fn file_contents(
    files: &[(String, Option<String>, u64)],
    relevant: &[Relevant],
    budget: usize,
) -> String {
    const HEADER: &str = "\nFiles the task mentions, numbered like READ's output (the numbers \
                          are not part of the files):\n";
    const ALSO: &str = "Also relevant: \n";
    if relevant.is_empty() {
        return String::new();
    }
    let mut shown = String::new();
    let mut left_out: Vec<&str> = Vec::new();
    // Room kept for the header and the closing "Also relevant" line, whatever is left out.
    let reserve =
        HEADER.len() + ALSO.len() + relevant.iter().map(|r| r.path.len() + 2).sum::<usize>();
    let mut count = 0;
    for r in relevant {
        let text = files
            .iter()
            .find(|(p, _, _)| p == &r.path)
            .and_then(|(_, t, _)| t.as_deref())
            .unwrap_or("");
        let lines: Vec<&str> = text.lines().collect();
        let width = crate::act::number_width(lines.len());
        let room = budget.saturating_sub(shown.len() + reserve);
        let whole = format!(
            "File {} ({} lines, {}):\n{}",
            r.path,
            lines.len(),
            r.why,
            crate::act::numbered(lines.iter().copied(), 1, width)
        );
        let piece = match count < CONTEXT_FILES {
            false => None,
            true if whole.len() <= room => Some(whole),
            true => partial(r, &lines, width, room),
        };
        match piece {
            Some(p) => {
                shown.push_str(&p);
                count += 1;
            }
            None => left_out.push(&r.path),
        }
    }
    let mut s = String::new();
    if !shown.is_empty() {
        s.push_str(HEADER);
        s.push_str(&shown);
    }
    if !left_out.is_empty()
        && HEADER.len()
            + shown.len()
            + ALSO.len()
            + left_out.len() * 2
            + left_out.iter().map(|p| p.len()).sum::<usize>()
            <= budget
    {
        let _ = writeln!(s, "Also relevant: {}", left_out.join(", "));
    }
    s
}

/// As many of a file's lines as fit in `room` characters, from a little before its focus;
/// `None` when fewer than [`CONTEXT_MIN_LINES`] fit.
fn partial(r: &Relevant, lines: &[&str], width: usize, room: usize) -> Option<String> {
    let from = r.focus.saturating_sub(CONTEXT_LEAD);
    let head = |to: usize| {
        format!(
            "File {} (lines {}-{to} of {}, {}; READ {} for the rest):\n",
            r.path,
            from + 1,
            lines.len(),
            r.why,
            r.path,
        )
    };
    let mut to = from;
    let mut body = String::new();
    while to < lines.len() {
        let row = crate::act::numbered([lines[to]], to + 1, width);
        if head(lines.len()).len() + body.len() + row.len() > room {
            break;
        }
        body.push_str(&row);
        to += 1;
    }
    (to - from >= CONTEXT_MIN_LINES).then(|| head(to) + &body)
}
