//! A file block that holds only some of a file's top-level definitions, spliced into the
//! file: every definition the block holds replaces the file's definition of that name, in
//! its place; a definition the file lacks goes in after the one the block puts it after;
//! everything else the file has stays as it is.
//!
//! Small coder models asked to fix one function of a file shown to them whole write back
//! only that function (the 1.5B on backoff-cap: `delays` with the right `min(…)` fix, and
//! `call_with_retry` left out). Written as it came, the file would lose the rest; refused,
//! the fix is lost and the model rarely writes it again. Spliced, nothing is guessed: each
//! definition names its own place, and a block that holds anything whose place is not
//! certain (a statement the file does not have, a name twice) is not spliced at all.
//!
//! The caller decides when to splice (the task does not ask for definitions to go: see
//! [`crate::whole::dropped_definitions`]) and checks the result again.

use std::collections::BTreeSet;

/// The repair's name, in the journal's commit and in what the model is told.
pub const PARTIAL_FILE_MERGED: &str = codec::RepairKind::PartialFileMerged.as_str();

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Shell,
}

/// Whether the splice reads `path`'s language (Python or shell).
pub(crate) fn reads(path: &str) -> bool {
    lang(path).is_some()
}

fn lang(path: &str) -> Option<Lang> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("py") => Some(Lang::Python),
        Some("sh" | "bash") => Some(Lang::Shell),
        _ => None,
    }
}

/// One top-level piece of a file: a definition (with its decorators) and its name, or any
/// other statement with the lines indented under it, or a blank line.
#[derive(Debug)]
struct Unit<'t> {
    name: Option<String>,
    lines: Vec<&'t str>,
}

impl Unit<'_> {
    fn text(&self) -> String {
        self.lines.join("\n")
    }

    fn blank(&self) -> bool {
        self.name.is_none() && self.lines.iter().all(|l| l.trim().is_empty())
    }
}

/// The name a Python line at column 0 defines (`def f`, `async def f`, `class C`).
fn python_def(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("def ")
        .or_else(|| line.strip_prefix("async def "))
        .or_else(|| line.strip_prefix("class "))?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The name a shell line at column 0 defines (`f() {`, `f ()`, `function f {`).
pub(crate) fn shell_def(line: &str) -> Option<String> {
    if let Some(rest) = line.strip_prefix("function ") {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        return (!name.is_empty()).then_some(name);
    }
    let (name, after) = line.split_once('(')?;
    let name = name.trim_end();
    let after = after.trim_start().strip_prefix(')')?.trim_start();
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && (after.is_empty() || after.starts_with('{'));
    ok.then(|| name.to_owned())
}

/// The top-level units of `text`, or `None` when a shell function never closes.
fn units(text: &str, lang: Lang) -> Option<Vec<Unit<'_>>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Unit<'_>> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            out.push(Unit {
                name: None,
                lines: vec![line],
            });
            i += 1;
            continue;
        }
        let start = i;
        let name = match lang {
            Lang::Python => {
                // Decorators go with the definition under them.
                let mut j = i;
                while j < lines.len() && lines[j].starts_with('@') {
                    j += 1;
                }
                let name = lines.get(j).and_then(|l| python_def(l));
                if name.is_some() {
                    i = j;
                }
                name
            }
            Lang::Shell => shell_def(line),
        };
        i += 1;
        match (lang, &name) {
            (Lang::Shell, Some(_)) => {
                // To the `}` at column 0 that closes it (the header's own `{ …; }` on one line
                // closes it there).
                let one_line = line.trim_end().ends_with('}');
                if !one_line {
                    let close = lines[i..].iter().position(|l| l.trim_end() == "}")?;
                    i += close + 1;
                }
            }
            _ => {
                // Python: indented lines, blank lines between them and closing brackets at
                // column 0 belong to the unit; blank lines at its end do not. A shell
                // statement keeps its indented continuation the same way.
                let mut end = i;
                while i < lines.len() {
                    let l = lines[i];
                    if l.trim().is_empty() {
                        i += 1;
                        continue;
                    }
                    let continues = l.starts_with([' ', '\t'])
                        || (lang == Lang::Python && l.starts_with([')', ']', '}']));
                    if !continues {
                        break;
                    }
                    i += 1;
                    end = i;
                }
                i = end;
            }
        }
        out.push(Unit {
            name,
            lines: lines[start..i].to_vec(),
        });
    }
    Some(out)
}

/// A line that brings in another module: new ones in a partial block go after the file's own.
fn is_import(line: &str, lang: Lang) -> bool {
    match lang {
        Lang::Python => {
            line.starts_with("import ") || (line.starts_with("from ") && line.contains(" import "))
        }
        Lang::Shell => line.starts_with(". ") || line.starts_with("source "),
    }
}

/// What a splice did: the merged file, and the definitions the block replaced, added, and
/// left out (kept from the file as they were).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spliced {
    pub content: String,
    pub replaced: Vec<String>,
    pub added: Vec<String>,
    pub kept: Vec<String>,
    /// The file's `if __name__ == "__main__":` block, left out of the block, kept at the end
    /// ([`keep_main_guard`]).
    pub kept_guard: bool,
}

/// `content`, a block written whole for `path` (which reads `original`), spliced into the file
/// when it holds some of the file's top-level definitions and nothing whose place is unsure:
/// its other statements must be the file's own (unchanged) or new imports. `None` when it
/// cannot be spliced that way, or the block holds every definition the file has.
pub fn splice(path: &str, original: &str, content: &str) -> Option<Spliced> {
    let lang = lang(path)?;
    let file = units(original, lang)?;
    let block = units(content, lang)?;
    let names = |us: &[Unit<'_>]| -> Option<Vec<String>> {
        let names: Vec<String> = us.iter().filter_map(|u| u.name.clone()).collect();
        let unique: BTreeSet<&String> = names.iter().collect();
        (unique.len() == names.len()).then_some(names)
    };
    let file_defs = names(&file)?;
    let block_defs = names(&block)?;
    let replaced: Vec<String> = block_defs
        .iter()
        .filter(|n| file_defs.contains(n))
        .cloned()
        .collect();
    let kept: Vec<String> = file_defs
        .iter()
        .filter(|n| !block_defs.contains(n))
        .cloned()
        .collect();
    if replaced.is_empty() || kept.is_empty() {
        return None;
    }
    // Every statement of the block is the file's own, unchanged, or a new import.
    let file_statements: BTreeSet<String> = file
        .iter()
        .filter(|u| u.name.is_none() && !u.blank())
        .map(|u| u.text().trim_end().to_owned())
        .collect();
    let mut imports: Vec<&str> = Vec::new();
    for u in block.iter().filter(|u| u.name.is_none() && !u.blank()) {
        let text = u.text();
        if file_statements.contains(text.trim_end()) {
            continue;
        }
        if u.lines.len() == 1 && is_import(u.lines[0], lang) {
            imports.push(u.lines[0]);
            continue;
        }
        return None;
    }
    // The definitions the file lacks, each after the block's definition before it (or, for
    // those before the block's first known one, before that one).
    let mut after: Vec<(Option<String>, Vec<&Unit<'_>>)> = Vec::new();
    let mut anchor: Option<String> = None;
    let mut added = Vec::new();
    for u in &block {
        let Some(name) = &u.name else { continue };
        if file_defs.contains(name) {
            anchor = Some(name.clone());
            continue;
        }
        added.push(name.clone());
        match after.iter_mut().find(|(a, _)| *a == anchor) {
            Some((_, list)) => list.push(u),
            None => after.push((anchor.clone(), vec![u])),
        }
    }
    let gap = match lang {
        Lang::Python => "\n\n",
        Lang::Shell => "",
    };
    let new_defs = |key: Option<&String>, out: &mut Vec<String>, before: bool| {
        if let Some((_, list)) = after.iter().find(|(a, _)| a.as_ref() == key) {
            for u in list {
                if !before {
                    out.push(format!("{gap}\n{}", u.text()));
                } else {
                    out.push(format!("{}\n{gap}", u.text()));
                }
            }
        }
    };
    let last_import = file
        .iter()
        .rposition(|u| u.name.is_none() && u.lines.len() == 1 && is_import(u.lines[0], lang));
    if !imports.is_empty() && last_import.is_none() {
        return None;
    }
    let first_known = replaced.first().cloned();
    let mut pieces: Vec<String> = Vec::new();
    for (k, u) in file.iter().enumerate() {
        match &u.name {
            Some(name) if block_defs.contains(name) => {
                if Some(name) == first_known.as_ref() {
                    new_defs(None, &mut pieces, true);
                }
                let mine = block.iter().find(|b| b.name.as_ref() == Some(name))?;
                pieces.push(mine.text());
                new_defs(Some(name), &mut pieces, false);
            }
            _ => pieces.push(u.text()),
        }
        if Some(k) == last_import {
            for line in &imports {
                pieces.push((*line).to_owned());
            }
        }
    }
    let mut merged = pieces.join("\n");
    if original.ends_with('\n') {
        merged.push('\n');
    }
    Some(Spliced {
        content: merged,
        replaced,
        added,
        kept,
        kept_guard: false,
    })
}

/// `text` (the file at `path`) with only the top-level definitions named in `keep` and every
/// other statement (imports, constants, the main guard): what a first message shows of a file
/// when the task's command runs only some of its functions ([`crate::whole::functions_message`]).
/// Returns the shown text and the definitions left out, in file order. `None` when the file
/// is no language [`splice`] knows, a name of `keep` is no top-level definition of it (a
/// method), or a definition's name is there twice: a block written back from what was shown
/// must splice into the file.
pub(crate) fn subset(path: &str, text: &str, keep: &[String]) -> Option<(String, Vec<String>)> {
    let lang = lang(path)?;
    let file = units(text, lang)?;
    let names: Vec<&String> = file.iter().filter_map(|u| u.name.as_ref()).collect();
    let unique: BTreeSet<&&String> = names.iter().collect();
    if unique.len() != names.len() || keep.iter().any(|k| !names.contains(&k)) {
        return None;
    }
    let mut left_out = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for u in &file {
        match &u.name {
            Some(name) if !keep.contains(name) => left_out.push(name.clone()),
            _ => {
                // No more than two blank lines in a row where definitions were taken out,
                // and none before the first line kept.
                let blank_run = lines
                    .iter()
                    .rev()
                    .take_while(|l| l.trim().is_empty())
                    .count();
                if !(u.blank() && (blank_run >= 2 || lines.is_empty())) {
                    lines.extend(&u.lines);
                }
            }
        }
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let mut shown = lines.join("\n");
    shown.push('\n');
    Some((shown, left_out))
}

/// `text` (a Python file, or the part of it a first message shows) with the body of function
/// `name` left out: its decorators, signature and docstring kept, nothing under them, so that
/// the model writes the function anew instead of copying it back. `None` when the file is no
/// Python, `name` is no top-level definition of it, or it has no docstring (a bare signature
/// is no Python to show).
pub(crate) fn without_body(path: &str, text: &str, name: &str) -> Option<String> {
    if lang(path)? != Lang::Python {
        return None;
    }
    let file = units(text, Lang::Python)?;
    let at = file.iter().position(|u| u.name.as_deref() == Some(name))?;
    let unit = &file[at];
    // The signature ends at the first line whose code ends with a colon.
    let code = |l: &str| l.split('#').next().unwrap_or("").trim_end().to_owned();
    let header = unit.lines.iter().position(|l| code(l).ends_with(':'))?;
    let first = unit.lines.get(header + 1)?.trim_start();
    let quote = ["\"\"\"", "'''"].into_iter().find(|q| {
        first
            .trim_start_matches(['r', 'R', 'u', 'U'])
            .starts_with(q)
    })?;
    let opened = first.find(quote)? + quote.len();
    let end = if first[opened..].contains(quote) {
        header + 1
    } else {
        (header + 2..unit.lines.len()).find(|&k| unit.lines[k].contains(quote))?
    };
    let mut out: Vec<String> = file.iter().map(Unit::text).collect();
    out[at] = unit.lines[..=end].join("\n");
    let mut shown = out.join("\n");
    if text.ends_with('\n') {
        shown.push('\n');
    }
    Some(shown)
}

/// `written`, a block for `path` (which reads `original`) from a first message that showed
/// the file without the definitions `names` ([`subset`]), as the content to act on: the
/// model never saw those, so what it wrote for them is a guess and the file's own are kept.
/// A block that [`splice`]s without them (its statements the file's own) is returned without
/// them; one that changed a statement (a constant the fix needs) gets the file's definitions
/// put back where the file has them, after the definition before them that the block holds
/// (before the first it holds, for those at the top). Returns the content and the names
/// the block wrote otherwise than the file; `None` when the block can be taken as it is (it
/// writes none of them, or each as the file has it, and splices or holds them all), or the
/// definitions have no certain place.
pub fn keep_unshown(
    path: &str,
    original: &str,
    written: &str,
    names: &[String],
) -> Option<(String, Vec<String>)> {
    let lang = lang(path)?;
    let file = units(original, lang)?;
    let block = units(written, lang)?;
    let guessed: Vec<String> = block
        .iter()
        .filter_map(|u| {
            let name = u.name.as_ref().filter(|n| names.contains(n))?;
            let own = file.iter().find(|f| f.name.as_ref() == Some(name))?;
            (own.text() != u.text()).then(|| name.clone())
        })
        .collect();
    // The block without them; the blank lines around a definition taken out collapse.
    let blanks = match lang {
        Lang::Python => 2,
        Lang::Shell => 1,
    };
    let mut rest: Vec<&Unit<'_>> = Vec::new();
    let mut had_any = false;
    for u in &block {
        if u.name.as_ref().is_some_and(|n| names.contains(n)) {
            had_any = true;
            continue;
        }
        let run = rest.iter().rev().take_while(|r| r.blank()).count();
        if !(u.blank() && run >= blanks) {
            rest.push(u);
        }
    }
    while rest.last().is_some_and(|u| u.blank()) {
        rest.pop();
    }
    let mut stripped = rest.iter().map(|u| u.text()).collect::<Vec<_>>().join("\n");
    if written.ends_with('\n') {
        stripped.push('\n');
    }
    if splice(path, original, &stripped).is_some() {
        return (!guessed.is_empty()).then_some((stripped, guessed));
    }
    // Writes them all as the file has them: taken as it is.
    if had_any && guessed.is_empty() {
        return None;
    }
    // Put the file's own definitions back into the block, each after the nearest definition
    // before it in the file that the block holds.
    let held: Vec<&String> = rest.iter().filter_map(|u| u.name.as_ref()).collect();
    let mut after: Vec<(Option<&String>, Vec<String>)> = Vec::new();
    let mut anchor: Option<&String> = None;
    for u in &file {
        let Some(name) = &u.name else { continue };
        if names.contains(name) {
            match after.iter_mut().find(|(a, _)| *a == anchor) {
                Some((_, list)) => list.push(u.text()),
                None => after.push((anchor, vec![u.text()])),
            }
        } else if held.contains(&name) {
            anchor = Some(name);
        }
    }
    let first_held = rest.iter().position(|u| u.name.is_some())?;
    let mut pieces: Vec<String> = Vec::new();
    for (k, u) in rest.iter().enumerate() {
        if k == first_held
            && let Some((_, list)) = after.iter().find(|(a, _)| a.is_none())
        {
            for t in list {
                pieces.push(t.clone());
                pieces.extend(std::iter::repeat_n(String::new(), blanks));
            }
        }
        pieces.push(u.text());
        if let Some(name) = &u.name
            && let Some((_, list)) = after.iter().find(|(a, _)| *a == Some(name))
        {
            for t in list {
                pieces.extend(std::iter::repeat_n(String::new(), blanks));
                pieces.push(t.clone());
            }
        }
    }
    let mut content = pieces.join("\n");
    if written.ends_with('\n') {
        content.push('\n');
    }
    Some((content, guessed))
}

/// `body`, a block without a path line, as the whole new content of `path` (which reads
/// `text`): when its top-level definitions are exactly the file's (the same names, none
/// twice). The 1.5B on book-year-field wrote catalog.py whole, with the right `year: int =
/// None`, under prose and without its path line; it holds every definition of the file, so no
/// part of it is a splice, and the change was lost. Every check a file written whole gets
/// still applies to it.
fn whole_file(path: &str, text: &str, body: &str) -> Option<Spliced> {
    let lang = lang(path)?;
    let names = |t: &str| -> Option<Vec<String>> {
        let names: Vec<String> = units(t, lang)?.into_iter().filter_map(|u| u.name).collect();
        let unique: BTreeSet<&String> = names.iter().collect();
        (unique.len() == names.len() && !names.is_empty()).then_some(names)
    };
    let (mine, theirs) = (names(body)?, names(text)?);
    let same: BTreeSet<&String> = mine.iter().collect();
    if same != theirs.iter().collect::<BTreeSet<_>>() {
        return None;
    }
    let mut content = body.to_owned();
    if !content.ends_with('\n') {
        content.push('\n');
    }
    Some(Spliced {
        content,
        replaced: mine,
        added: Vec::new(),
        kept: Vec::new(),
        kept_guard: false,
    })
}

/// Words of a task that may ask for a script's `if __name__ == "__main__":` block to change
/// or go.
const GUARD_WORDS: &[&str] = &["main", "__main__", "__name__", "entry", "guard"];

/// `content`, written whole for the Python file `path` (which reads `original`), with the
/// file's `if __name__ == "__main__":` block put back at its end, when the block leaves it out
/// (no line of `content` names `__name__`), the file ends with it, and `task` says nothing of
/// a main or entry point. The 1.5B on rename-config-key renamed the key in client.py and
/// wrote the file back without the lines that run it, so `python3 client.py` printed
/// nothing; the place of the lines left out is certain (the file's end), so nothing is
/// guessed.
pub fn keep_main_guard(path: &str, original: &str, content: &str, task: &str) -> Option<Spliced> {
    if lang(path)? != Lang::Python || content.contains("__name__") || content.trim().is_empty() {
        return None;
    }
    let asked = task
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| GUARD_WORDS.contains(&w.to_lowercase().as_str()));
    if asked {
        return None;
    }
    let file = units(original, Lang::Python)?;
    let last = file.iter().rev().find(|u| !u.blank())?;
    let head = last.lines.first()?;
    let is_guard = last.name.is_none()
        && head.starts_with("if ")
        && head.contains("__name__")
        && head.contains("__main__");
    if !is_guard {
        return None;
    }
    let mut merged = content.trim_end().to_owned();
    merged.push_str("\n\n\n");
    merged.push_str(&last.text());
    merged.push('\n');
    Some(Spliced {
        content: merged,
        replaced: Vec::new(),
        added: Vec::new(),
        kept: Vec::new(),
        kept_guard: true,
    })
}

/// A fenced block's body with no path line above it, placed by its definitions: when every
/// definition it holds that any of `files` (path, content) has is a top-level definition of
/// one file and of no other, and it splices into that file ([`splice`]), that file and the
/// splice. Of several `blocks`, the one that changes a file, when exactly one does (a reply
/// that shows the code as it was and then as it should be).
pub fn place(files: &[(String, String)], blocks: &[&str]) -> Option<(String, Spliced)> {
    match placement(files, blocks) {
        Placement::Change(path, s) => Some((path, s)),
        _ => None,
    }
}

/// Where the unnamed `blocks` go ([`place`]), or that they hold a file's definitions exactly
/// as the file has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// No block places by its definitions, or more than one changes a file.
    Nowhere,
    /// One block changes this file, spliced so.
    Change(String, Spliced),
    /// No block changes a file, and one holds definitions of this file as they are.
    Same(String),
}

/// [`place`], telling apart the blocks that would change nothing.
pub fn placement(files: &[(String, String)], blocks: &[&str]) -> Placement {
    let mut found: Vec<(String, Spliced)> = Vec::new();
    let mut same: Option<String> = None;
    for body in blocks {
        let mut homes = files.iter().filter(|(path, text)| {
            lang(path).is_some_and(|l| {
                let defs = |t: &str| -> Vec<String> {
                    units(t, l)
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|u| u.name)
                        .collect()
                };
                let mine = defs(body);
                let theirs = defs(text);
                mine.iter().any(|n| theirs.contains(n))
            })
        });
        let (Some((path, text)), None) = (homes.next(), homes.next()) else {
            continue;
        };
        match splice(path, text, body).or_else(|| whole_file(path, text, body)) {
            Some(s) if s.content != *text => found.push((path.clone(), s)),
            Some(_) => same = Some(path.clone()),
            None => {}
        }
    }
    match (found.len(), same) {
        (1, _) => {
            let (path, s) = found.remove(0);
            Placement::Change(path, s)
        }
        (0, Some(path)) => Placement::Same(path),
        _ => Placement::Nowhere,
    }
}

/// What the model is told with a change a block without a path line made.
pub const PLACED: &str = "your code block had no path line above it; its definitions are this \
     file's own, so it was written into this file (block_placed_by_definitions), anything of \
     the file it left out kept as it was. Next time put the file's path alone on the line \
     above the fence";

/// What the model is told with the change: which definitions its block held, and which the
/// file kept as they were.
pub fn describe(s: &Spliced) -> String {
    if s.kept_guard {
        return format!(
            "your block left out the file's `if __name__ == \"__main__\":` lines, which the \
             task does not ask to remove; they were kept at the end of the file \
             ({PARTIAL_FILE_MERGED})"
        );
    }
    let mut text = format!(
        "your block held only {}, so it was spliced into the file ({PARTIAL_FILE_MERGED})",
        s.replaced
            .iter()
            .chain(&s.added)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    );
    text.push_str(&format!("; {} kept as they were", s.kept.join(", ")));
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const RETRY: &str = "\"\"\"Retrying.\"\"\"\n\nimport time\n\n\ndef delays(retries, base, max_delay):\n    out = []\n    delay = base\n    for _ in range(retries):\n        out.append(delay)\n        delay = delay * 2\n    return out\n\n\ndef call_with_retry(fn, retries):\n    for attempt in range(retries + 1):\n        try:\n            return fn()\n        except OSError:\n            time.sleep(1)\n";

    #[test]
    fn a_subset_keeps_the_named_definitions_and_every_statement() {
        let file = "import os\n\nLIMIT = 3\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return LIMIT\n\n\nif __name__ == '__main__':\n    print(b())\n";
        let (shown, left) = subset("m.py", file, &["b".to_owned()]).unwrap();
        assert_eq!(
            shown,
            "import os\n\nLIMIT = 3\n\n\ndef b():\n    return 2\n\n\nif __name__ == '__main__':\n    print(b())\n"
        );
        assert_eq!(left, ["a", "c"]);
        // What was shown, written back with a change, splices into the file.
        let changed = shown.replace("return 2", "return 20");
        let s = splice("m.py", file, &changed).unwrap();
        assert_eq!(s.content, file.replace("return 2", "return 20"));
        // A method, a name the file does not define, a file of no known language: none.
        let class = "class K:\n    def m(self):\n        return 1\n";
        assert!(subset("k.py", class, &["m".to_owned()]).is_none());
        assert!(subset("m.py", file, &["zzz".to_owned()]).is_none());
        assert!(subset("m.txt", file, &["b".to_owned()]).is_none());
        // Every definition named: the file as it is.
        let all = ["a", "b", "c"].map(str::to_owned);
        assert_eq!(
            subset("m.py", file, &all).unwrap(),
            (file.to_owned(), vec![])
        );
    }

    #[test]
    fn definitions_never_shown_are_kept_as_the_file_has_them() {
        let names = ["call_with_retry".to_owned()];
        let fixed = RETRY.replace("out.append(delay)", "out.append(min(delay, max_delay))");
        // The fix with a guessed call_with_retry: taken without it, spliced into the file.
        let guessed = fixed.replace("time.sleep(1)", "time.sleep(2)");
        let (content, kept) = keep_unshown("retry.py", RETRY, &guessed, &names).unwrap();
        assert_eq!(kept, names);
        assert_eq!(splice("retry.py", RETRY, &content).unwrap().content, fixed);
        // A changed statement (no splice): the file's own definition goes back in its place.
        let moved = guessed.replace("Retrying.", "Retrying, capped.");
        let (content, kept) = keep_unshown("retry.py", RETRY, &moved, &names).unwrap();
        assert_eq!(kept, names);
        assert_eq!(content, fixed.replace("Retrying.", "Retrying, capped."));
        // The shown part alone, with a changed statement: the rest goes back after delays.
        let shown = "\"\"\"Retrying.\"\"\"\n\nimport time\nLIMIT = 9\n\n\ndef delays(retries, base, max_delay):\n    return []\n";
        let (content, kept) = keep_unshown("retry.py", RETRY, shown, &names).unwrap();
        assert!(kept.is_empty());
        let tail = &RETRY[RETRY.find("\n\n\ndef call_with_retry").unwrap()..];
        assert_eq!(content, format!("{}{tail}", shown.trim_end()));
        // Written as the file has them, or left out of a block that splices: taken as it is.
        assert!(keep_unshown("retry.py", RETRY, &fixed, &names).is_none());
        let only = "def delays(retries, base, max_delay):\n    return []\n";
        assert!(keep_unshown("retry.py", RETRY, only, &names).is_none());
    }

    #[test]
    fn main_lines_left_out_go_back_at_the_end_only_when_certain() {
        let file = "import sys\n\n\ndef f():\n    return 1\n\n\nif __name__ == '__main__':\n    print(f())\n    sys.exit(0)\n";
        let block = "import sys\n\n\ndef f():\n    return 2\n";
        let s = keep_main_guard("a.py", file, block, "make f return 2").unwrap();
        assert!(s.kept_guard);
        assert_eq!(s.content, file.replace("return 1", "return 2"));
        // The block has its own main lines, the task names the entry point, the file does
        // not end with them, or it is no Python file: nothing to keep.
        let own = format!("{block}\n\nif __name__ == '__main__':\n    print(f() + 1)\n");
        assert_eq!(keep_main_guard("a.py", file, &own, "make f return 2"), None);
        assert_eq!(
            keep_main_guard("a.py", file, block, "drop the main block"),
            None
        );
        let guard_first = "if __name__ == '__main__':\n    print(1)\n\n\ndef f():\n    return 1\n";
        assert_eq!(keep_main_guard("a.py", guard_first, block, "fix f"), None);
        assert_eq!(keep_main_guard("a.sh", file, block, "fix f"), None);
    }

    #[test]
    fn a_block_of_one_function_replaces_it_and_keeps_the_rest() {
        let block = "\"\"\"Retrying.\"\"\"\n\nimport time\n\n\ndef delays(retries, base, max_delay):\n    out = []\n    delay = base\n    for _ in range(retries):\n        out.append(delay)\n        delay = min(delay * 2, max_delay)\n    return out\n";
        let s = splice("retry.py", RETRY, block).unwrap();
        assert_eq!(
            s.content,
            RETRY.replace(
                "        delay = delay * 2\n",
                "        delay = min(delay * 2, max_delay)\n"
            )
        );
        assert_eq!(s.replaced, ["delays"]);
        assert_eq!(s.kept, ["call_with_retry"]);
        assert!(s.added.is_empty());
    }

    #[test]
    fn new_functions_and_imports_go_where_the_block_puts_them() {
        let block = "import math\n\ndef helper(x):\n    return math.ceil(x)\n\n\ndef delays(retries, base, max_delay):\n    return [helper(base)] * retries\n\n\ndef extra():\n    pass\n";
        let s = splice("retry.py", RETRY, block).unwrap();
        assert_eq!(s.added, ["helper", "extra"]);
        let c = &s.content;
        let at = |needle: &str| c.find(needle).unwrap();
        assert!(at("import time\nimport math\n") < at("def helper"));
        assert!(at("def helper") < at("def delays"));
        assert!(at("def delays") < at("def extra"));
        assert!(at("def extra") < at("def call_with_retry"));
        assert!(c.contains("\n\n\ndef extra():\n    pass\n\n\ndef call_with_retry"));
        assert!(c.ends_with("            time.sleep(1)\n"));
    }

    #[test]
    fn a_block_whose_statements_are_not_the_files_is_not_spliced() {
        // A changed module-level statement has no certain place.
        let block = "import time\nRETRIES = 3\n\ndef delays(r, b, m):\n    return []\n";
        assert_eq!(splice("retry.py", RETRY, block), None);
        // A name twice in the block.
        let twice = "def delays(r, b, m):\n    return []\n\ndef delays(r, b, m):\n    return [1]\n";
        assert_eq!(splice("retry.py", RETRY, twice), None);
        // No definition of the file: another file's content, not a part of this one.
        assert_eq!(splice("retry.py", RETRY, "def other():\n    pass\n"), None);
        // Every definition there: a whole file, nothing to splice.
        assert_eq!(splice("retry.py", RETRY, RETRY), None);
        // A language it does not know.
        assert_eq!(splice("retry.txt", RETRY, "def delays():\n  x\n"), None);
        // A new import where the file has none.
        let plain = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";
        assert_eq!(
            splice("m.py", plain, "import os\n\ndef a():\n    return 3\n"),
            None
        );
    }

    #[test]
    fn a_block_without_a_path_goes_to_the_one_file_that_defines_its_functions() {
        let files = vec![
            ("retry.py".to_owned(), RETRY.to_owned()),
            ("sync.py".to_owned(), "def main():\n    pass\n".to_owned()),
            ("notes.txt".to_owned(), "def delays\n".to_owned()),
        ];
        let fixed = "def delays(retries, base, max_delay):\n    return [base] * retries\n";
        let as_it_was = "def delays(retries, base, max_delay):\n    out = []\n    delay = base\n    for _ in range(retries):\n        out.append(delay)\n        delay = delay * 2\n    return out\n";
        let (path, s) = place(&files, &[as_it_was, fixed]).unwrap();
        assert_eq!(path, "retry.py");
        assert!(
            s.content
                .contains("    return [base] * retries\n\n\ndef call_with_retry")
        );
        // Code of no file, or of two, or two blocks that both change: nowhere.
        assert_eq!(place(&files, &["def other():\n    pass\n"]), None);
        let mut two = files.clone();
        two.push(("retry2.py".to_owned(), RETRY.to_owned()));
        assert_eq!(place(&two, &[fixed]), None);
        let other = "def delays(retries, base, max_delay):\n    return []\n";
        assert_eq!(place(&files, &[fixed, other]), None);
        // The whole file, changed: it goes there whole; as it is: the same.
        let whole = RETRY.replace("delay = delay * 2", "delay = min(delay * 2, max_delay)");
        let (path, s) = place(&files, &[whole.as_str()]).unwrap();
        assert_eq!(
            (path.as_str(), s.content.as_str()),
            ("retry.py", whole.as_str())
        );
        assert!(s.kept.is_empty());
        assert_eq!(
            placement(&files, &[RETRY]),
            Placement::Same("retry.py".to_owned())
        );
        // The code as the file has it: nothing to write, and said so.
        assert_eq!(place(&files, &[as_it_was]), None);
        assert_eq!(
            placement(&files, &[as_it_was]),
            Placement::Same("retry.py".to_owned())
        );
        assert_eq!(
            placement(&files, &["def other():\n    pass\n"]),
            Placement::Nowhere
        );
    }

    #[test]
    fn decorators_and_multi_line_signatures_go_with_their_function() {
        let file = "@cache\ndef a(\n    x,\n):\n    return x\n\n\ndef b():\n    return 2\n";
        let block = "@cache\ndef a(\n    x,\n):\n    return x + 1\n";
        let s = splice("m.py", file, block).unwrap();
        assert_eq!(
            s.content,
            "@cache\ndef a(\n    x,\n):\n    return x + 1\n\n\ndef b():\n    return 2\n"
        );
    }

    #[test]
    fn shell_functions_splice_to_their_closing_brace() {
        let file = "#!/bin/sh\n. ./lib.sh\n\nlatest() {\n  sort | tail -n 1\n}\n\nshow() { echo \"$1\"; }\n\nshow \"$(latest < tags.txt)\"\n";
        let block = "latest() {\n  sort -V | tail -n 1\n}\n";
        let s = splice("latest.sh", file, block).unwrap();
        assert_eq!(s.content, file.replace("sort |", "sort -V |"));
        assert_eq!(s.kept, ["show"]);
        // A function that never closes is not spliced.
        assert_eq!(splice("latest.sh", file, "latest() {\n  sort -V\n"), None);
    }

    #[test]
    fn a_function_shown_anew_keeps_its_signature_and_docstring_only() {
        let file = "import re\n\n\n@cache\ndef parse(text,\n          strict=True):  # a note\n    \"\"\"Seconds in\n    a duration.\"\"\"\n    m = re.match(text)\n    return m\n\n\ndef other():\n    '''One line.'''\n    return 1\n";
        assert_eq!(
            super::without_body("d.py", file, "parse").unwrap(),
            "import re\n\n\n@cache\ndef parse(text,\n          strict=True):  # a note\n    \"\"\"Seconds in\n    a duration.\"\"\"\n\n\ndef other():\n    '''One line.'''\n    return 1\n"
        );
        assert_eq!(
            super::without_body("d.py", file, "other").unwrap(),
            file.replace("    return 1\n", "")
        );
        // No docstring, no such function, or no Python: nothing to show this way.
        let bare = "def f(x):\n    return x\n";
        assert_eq!(super::without_body("d.py", bare, "f"), None);
        assert_eq!(super::without_body("d.py", file, "missing"), None);
        assert_eq!(super::without_body("d.sh", "f() {\n  :\n}\n", "f"), None);
    }
}
