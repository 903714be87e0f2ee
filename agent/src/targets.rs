//! What a task ties to its files, checked at DONE: the quoted values it gives a file
//! (`make invoice.py pass "EUR"`: `literal_missing`), the files it names to change when the
//! session changed only others (`named_unchanged`), and the scripts it names that printed
//! something before and print nothing now (`output_lost`).
//!
//! Each check is read off the task's words and the repository as it is at DONE; like the rest
//! of [`crate::asks`], it only refuses a DONE (fed back, never a stop) and never acts.

use crate::probe::{Probe, ProbeRun, is_repo_file, sentence_bounds, word_spans};
use crate::workspace::Workspace;

/// The words of `text`, lower-cased, letters, digits and apostrophes only.
fn plain_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A word of `text` as a path could be written in it: without quotes, brackets, Markdown
/// emphasis (`*app.py*`, `**app.py**`) and the punctuation after it. A glob's star stays:
/// `*.log` is a pattern, not a file `.log` (the 0.5B, asked to add the line `*.log` to
/// .gitignore, created a file `.log` and said DONE).
pub(crate) fn bare(word: &str) -> &str {
    let mut w = word
        .trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')'))
        .trim_end_matches([',', '.', ';', ':', '!', '?', '`', '"', '\'']);
    while w.len() > 2 && w.starts_with('*') && w.ends_with('*') {
        w = w[1..w.len() - 1].trim_matches(|c: char| matches!(c, '`' | '"' | '\''));
    }
    w.strip_prefix("./").unwrap_or(w)
}

/// Words that make a quoted text in their sentence something a program prints or a user
/// reads, not a value the code must hold: `prints "Hello, Ann"` may be built from pieces.
const OUTPUT_WORDS: &[&str] = &[
    "print", "prints", "printed", "printing", "output", "outputs", "error", "errors", "fail",
    "fails", "failed", "crash", "crashes", "say", "says", "show", "shows", "display", "displays",
    "message", "messages", "warning", "warn", "warns", "log", "logs", "echo", "echoes",
];

/// Words of a sentence that ask for something not to be.
const NEGATIONS: &[&str] = &[
    "not", "never", "no", "don't", "dont", "doesn't", "without", "instead", "remove", "delete",
];

/// The word just before a quoted value when it is the value the code must take: `pass "EUR"`,
/// `defaulting to "USD"`, `use "utf-8"`, `replace it with "x"`. `from "8080"` (the old value)
/// and `rename "colour" …` are not.
const GIVES: &[&str] = &[
    "to", "pass", "passes", "passing", "use", "uses", "using", "with", "default", "be",
];

/// A value the task's words give the code, and the files that must hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// The text between the quotes.
    pub text: String,
    /// The repository files its clause names before it (`invoice.py` in `make invoice.py
    /// pass "EUR" and …`); empty: any file of code.
    pub files: Vec<String>,
}

/// The quoted values `task` gives the code: a double-quoted text of one to 40 characters, no
/// whitespace, no path or file name, right after one of [`GIVES`] (or `=`), in a sentence that
/// neither talks about output ([`OUTPUT_WORDS`]) nor negates ([`NEGATIONS`]). The 0.5B, asked
/// to add a currency parameter and make invoice.py pass "EUR", changed money.py alone, and the
/// check (which tests money.py) passed.
pub fn literals(task: &str, ws: &Workspace) -> Vec<Literal> {
    let mut out = Vec::new();
    for range in sentence_bounds(task) {
        let sentence = &task[range.clone()];
        let words = plain_words(sentence);
        if words
            .iter()
            .any(|w| OUTPUT_WORDS.contains(&w.as_str()) || NEGATIONS.contains(&w.as_str()))
        {
            continue;
        }
        for (open, close) in quote_pairs(sentence) {
            let text = &sentence[open + 1..close];
            if !value_like(text) || !given(&sentence[..open]) {
                continue;
            }
            let clause = clause_before(&sentence[..open]);
            let named = |part: &str| -> Vec<String> {
                word_spans(part)
                    .into_iter()
                    .map(|(_, w)| bare(w))
                    .filter(|w| is_repo_file(ws, w))
                    .map(str::to_owned)
                    .collect()
            };
            // Only the clause's own files: `In money.py, add a parameter; callers pass "EUR"`
            // puts "EUR" in the callers, not in money.py.
            let mut files = named(clause);
            files.dedup();
            out.push(Literal {
                text: text.to_owned(),
                files,
            });
        }
    }
    out
}

/// Byte offsets of each pair of straight double quotes on one line of `text`.
fn quote_pairs(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, c) in text.char_indices() {
        match (c, open) {
            ('\n', _) => open = None,
            ('"', None) => open = Some(i),
            ('"', Some(o)) => {
                out.push((o, i));
                open = None;
            }
            _ => {}
        }
    }
    out
}

/// One to 40 characters, no whitespace, no `/`, no quote, and not a file name (`config.json`
/// is a file the task names, not a value).
fn value_like(text: &str) -> bool {
    let n = text.chars().count();
    (1..=40).contains(&n)
        && !text.contains(|c: char| c.is_whitespace() || matches!(c, '/' | '\\' | '\'' | '`'))
        && !crate::asks::file_name_like(text)
}

/// The text before a quote ends with one of [`GIVES`] or `=`.
fn given(before: &str) -> bool {
    let before = before.trim_end_matches('`');
    if before.ends_with('=') {
        return true;
    }
    before
        .split_whitespace()
        .next_back()
        .map(|w| bare(w).to_lowercase())
        .is_some_and(|w| GIVES.contains(&w.as_str()))
}

/// The clause `before` (a sentence up to a quote) ends in: the text after its last `,`, `;`,
/// ` and ` or ` then `.
fn clause_before(before: &str) -> &str {
    let cut = [",", ";", " and ", " then "]
        .iter()
        .filter_map(|sep| before.rfind(sep).map(|i| i + sep.len()))
        .max()
        .unwrap_or(0);
    &before[cut..]
}

/// File extensions of prose, where a value is documented, not given to the code.
pub(crate) const PROSE: &[&str] = &["md", "txt", "rst", "markdown", "adoc"];

/// The first of [`literals`] that no file it names holds (with none named: no file of code
/// in `ws`), with the files it looked in.
pub fn literal_missing(task: &str, ws: &Workspace) -> Option<Literal> {
    let read = |p: &str| {
        ws.read(p)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let mut all: Option<Vec<String>> = None;
    literals(task, ws).into_iter().find(|lit| {
        let holds = |p: &String| read(p).is_some_and(|t| t.contains(&lit.text));
        if !lit.files.is_empty() {
            return !lit.files.iter().any(holds);
        }
        let code = all.get_or_insert_with(|| {
            ws.files("")
                .unwrap_or_default()
                .into_iter()
                .filter(|p| {
                    !p.rsplit_once('.')
                        .is_some_and(|(_, e)| PROSE.contains(&e.to_lowercase().as_str()))
                })
                .take(MAX_FILES)
                .collect()
        });
        !code.iter().any(holds)
    })
}

/// A value the task says a file passes to a function, and the call in that file that does
/// not pass it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPassed {
    /// The file the task says passes the value.
    pub file: String,
    /// The function the task gives a parameter.
    pub function: String,
    /// The value (the text between the task's quotes).
    pub text: String,
    /// The first call of `function` in `file` without the value, as written.
    pub call: String,
}

/// Words of a sentence that make it give a function a parameter.
const PARAMETER_WORDS: &[&str] = &[
    "parameter",
    "parameters",
    "argument",
    "arguments",
    "arg",
    "param",
    "keyword",
];

/// Verbs before a quoted value that make it an argument: `make invoice.py pass "EUR"`.
const PASS_WORDS: &[&str] = &["pass", "passes", "passing"];

/// A value the task says a file passes (`make invoice.py pass "EUR"`) to a function the task
/// gives a parameter (`Add a parameter currency to format_price …`), and a call of that
/// function in that file that does not carry it. A call carries it when the value is between its brackets,
/// or a name the file binds to the value (`CURRENCY = "EUR"`) is. Judged only when the file
/// calls the function, and only where the task's sentence with a parameter word names it.
/// The 1.5B, asked this, gave `invoice_line` a `currency="USD"` parameter of its own, passed
/// it on (`format_price(amount, currency)`), and put "EUR" in the demo alone: invoice.py held
/// "EUR", its check passed, and every other caller of `invoice_line` still printed USD.
pub fn value_not_passed(task: &str, ws: &Workspace) -> Option<NotPassed> {
    let functions: Vec<String> = sentence_bounds(task)
        .into_iter()
        .map(|r| &task[r])
        .filter(|s| {
            plain_words(s)
                .iter()
                .any(|w| PARAMETER_WORDS.contains(&w.as_str()))
        })
        .flat_map(|s| word_spans(s).into_iter().map(|(_, w)| bare(w).to_owned()))
        .filter(|w| is_identifier(w))
        .collect();
    if functions.is_empty() {
        return None;
    }
    let passed: Vec<Literal> = literals(task, ws)
        .into_iter()
        .filter(|l| !l.files.is_empty())
        .collect();
    for lit in passed {
        if !passes_clause(task, &lit) {
            continue;
        }
        for file in &lit.files {
            let Some(text) = ws
                .read(file)
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
            else {
                continue;
            };
            let bound = names_bound_to(&text, &lit.text);
            for function in &functions {
                let calls = calls_of(&text, function);
                if calls.is_empty() {
                    continue;
                }
                let carries = |args: &str| {
                    args.contains(&lit.text)
                        || ident_words(args).any(|w| bound.iter().any(|b| b == w))
                };
                if let Some((call, _)) = calls.iter().find(|(_, args)| !carries(args)) {
                    return Some(NotPassed {
                        file: file.clone(),
                        function: function.clone(),
                        text: lit.text.clone(),
                        call: call.clone(),
                    });
                }
            }
        }
    }
    None
}

/// The word right before the value's opening quote in `task` is one of [`PASS_WORDS`].
fn passes_clause(task: &str, lit: &Literal) -> bool {
    quote_pairs(task).into_iter().any(|(open, close)| {
        task[open + 1..close] == lit.text
            && task[..open]
                .split_whitespace()
                .next_back()
                .is_some_and(|w| PASS_WORDS.contains(&bare(w).to_lowercase().as_str()))
    })
}

/// A name a program could call: letters, digits and `_`, not starting with a digit, with a
/// `_` or a capital inside (`format_price`, `formatPrice`) so plain English words are not
/// taken for functions.
fn is_identifier(w: &str) -> bool {
    let mut chars = w.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && (w.contains('_') || w.chars().skip(1).any(|c| c.is_ascii_uppercase()))
}

/// The identifier-like words of `text`.
fn ident_words(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Names `text` binds to the quoted `value`: an assignment on a line of its own
/// (`CURRENCY = "EUR"`) or a parameter's default on a definition's line (`def
/// invoice_line(item, amount, currency="EUR"):`). A keyword argument of a call
/// (`invoice_line("widget", 3.5, currency="EUR")`) binds nothing beyond that call.
fn names_bound_to(text: &str, value: &str) -> Vec<String> {
    let quoted = [format!("\"{value}\""), format!("'{value}'")];
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        let definition = ["def ", "async def ", "function ", "fn ", "func "]
            .iter()
            .any(|k| l.starts_with(k));
        if definition {
            // Every `name = value` inside the line.
            for q in &quoted {
                let mut from = 0;
                while let Some(i) = l[from..].find(q.as_str()).map(|i| i + from) {
                    from = i + q.len();
                    let Some(before) = l[..i].trim_end().strip_suffix('=') else {
                        continue;
                    };
                    if before.ends_with(['=', '!', '<', '>']) {
                        continue;
                    }
                    if let Some(name) = ident_words(before.trim_end()).next_back()
                        && before.trim_end().ends_with(name)
                    {
                        out.push(name.to_owned());
                    }
                }
            }
            continue;
        }
        let Some((name, rhs)) = l.split_once('=') else {
            continue;
        };
        let name = ["const ", "let ", "var ", "export "]
            .iter()
            .fold(name.trim(), |n, k| n.strip_prefix(k).unwrap_or(n))
            .trim();
        if quoted.contains(&rhs.trim().trim_end_matches(';').to_owned())
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            out.push(name.to_owned());
        }
    }
    out
}

/// Each call of `function` in `text` (not its definition): the call as written, up to 120
/// bytes, and the text between its brackets. A call whose brackets do not close is taken to
/// the end of the text.
fn calls_of(text: &str, function: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(function).map(|i| i + from) {
        from = i + function.len();
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[from..];
        let Some(after) = rest.strip_prefix('(') else {
            continue;
        };
        let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
        let head = text[line_start..i].trim_start();
        if ["def ", "function ", "fn ", "func ", "async def "]
            .iter()
            .any(|k| head.starts_with(k) && head[k.len()..].trim().is_empty())
        {
            continue;
        }
        let mut depth = 1usize;
        let mut end = after.len();
        for (j, c) in after.char_indices() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        let args = after[..end].to_owned();
        let mut call = format!("{function}({args})");
        if call.len() > 120 {
            let mut cut = 117;
            while !call.is_char_boundary(cut) {
                cut -= 1;
            }
            call.truncate(cut);
            call.push_str("...");
        }
        out.push((call, args));
    }
    out
}

/// The repository files `task` names, each once in the order it first names them, with
/// their text (invalid UTF-8 replaced).
pub(crate) fn named_texts(task: &str, ws: &Workspace) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, word) in crate::probe::word_spans(task) {
        let path = bare(word);
        if out.iter().any(|(p, _)| p == path) || !crate::probe::is_repo_file(ws, path) {
            continue;
        }
        if let Some(bytes) = ws.read(path).ok().flatten() {
            out.push((
                path.to_owned(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    out
}

/// Files of code a search for a value reads at most.
const MAX_FILES: usize = 500;

/// Words that let a task's change be a new file alone: a test written for a file the task
/// names leaves that file as it was.
const NEW_FILE_WORDS: &[&str] = &[
    "create", "creates", "new", "write", "writes", "generate", "copy", "test", "tests", "module",
    "script",
];

/// The files `task` names that are still in `ws`, when all the session changed (`changed`)
/// is new files (`created`) the task does not name: (the named files, the new ones). A file a
/// command the task writes runs (`probes`, not those the session adds) or a test is not one
/// the task asks to change; nor does
/// a task that may be done by a new file alone ([`NEW_FILE_WORDS`]) ask for any. The 0.5B,
/// asked to remove a debug print from app.py, wrote a new files.txt, left app.py as it was
/// and said DONE; asked to add a line to .gitignore, it wrote a README.md.
pub fn named_unchanged(
    task: &str,
    ws: &Workspace,
    (changed, created): (&[String], &[String]),
    probes: &[Probe],
) -> Option<(Vec<String>, Vec<String>)> {
    if changed.iter().any(|c| !created.contains(c)) {
        return None;
    }
    // `module-level` (a constant at a module's top) asks for no new module.
    let lowered = task.to_lowercase().replace("module-level", "");
    if changed.is_empty()
        || plain_words(&lowered)
            .iter()
            .any(|w| NEW_FILE_WORDS.contains(&w.as_str()))
    {
        return None;
    }
    let words: Vec<&str> = word_spans(task).into_iter().map(|(_, w)| bare(w)).collect();
    if changed.iter().any(|c| words.contains(&c.as_str())) {
        return None;
    }
    let mut named: Vec<String> = words
        .into_iter()
        .filter(|w| is_repo_file(ws, w))
        .filter(|w| !crate::probe::is_test(&[format!("./{w}")]))
        .filter(|w| {
            !probes
                .iter()
                .filter(|p| !p.plain && !p.keep && !p.found)
                .any(|p| p.argv.iter().any(|a| bare(a) == *w))
        })
        .map(str::to_owned)
        .collect();
    named.sort();
    named.dedup();
    if named.is_empty() || named.iter().any(|n| changed.contains(n)) {
        return None;
    }
    Some((named, changed.to_vec()))
}

/// Verbs whose direct object is a file the task asks to change: `Update README.md …`.
const CHANGE_VERBS: &[&str] = &[
    "update", "edit", "modify", "change", "fix", "correct", "amend", "rewrite", "refactor",
];

/// Words between such a verb and its file that do not stop the search: `Update the file
/// README.md`.
const BEFORE_OBJECT: &[&str] = &["the", "file", "script", "module", "your", "this"];

/// The first file `task` names as the direct object of a change verb ([`CHANGE_VERBS`]:
/// the verb, then at most [`BEFORE_OBJECT`] words, then a repository file) that the session
/// has not changed (`changed`). `Fix the typo in README.md` names none (the object is the
/// typo). The 0.5B, told to update README.md to match the options resize.py accepts, rewrote
/// resize.py's description and said DONE.
pub fn object_unchanged(task: &str, ws: &Workspace, changed: &[String]) -> Option<String> {
    let words: Vec<&str> = word_spans(task).into_iter().map(|(_, w)| bare(w)).collect();
    for (k, w) in words.iter().enumerate() {
        let lower = w.to_lowercase();
        let negated = k > 0 && NEGATIONS.contains(&words[k - 1].to_lowercase().as_str());
        if negated || !CHANGE_VERBS.contains(&lower.as_str()) {
            continue;
        }
        let object = words[k + 1..]
            .iter()
            .take(3)
            .find(|o| !BEFORE_OBJECT.contains(&o.to_lowercase().as_str()));
        if let Some(file) = object
            && is_repo_file(ws, file)
            && !changed.iter().any(|c| c == file)
        {
            return Some((*file).to_owned());
        }
    }
    None
}

/// Verbs that ask for lines of a file to go.
const REMOVING: &[&str] = &["remove", "delete", "drop", "strip"];

/// Words between such a verb and what it removes that say how many: `all` and its kin make
/// it every line the description fits.
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "all", "every", "each", "any",
];

/// Nouns that end the description of what goes: `the debug print line`.
const LINE_NOUNS: &[&str] = &[
    "line",
    "lines",
    "statement",
    "statements",
    "call",
    "calls",
    "comment",
    "comments",
];

/// Words of a description at most, before its noun or its file.
const MAX_DESCRIPTION: usize = 4;

/// The lower-cased runs of letters and digits of `text`: `print("debug: x")` gives print,
/// debug, x.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Lines the task asks to remove that are still there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    /// The file the task names.
    pub file: String,
    /// What the task calls the line(s), as it writes it: `debug print line`.
    pub what: String,
    /// The first line of the file now that fits the description.
    pub line: String,
}

/// A line `task` asks to remove that is still in its file: the task says `remove the debug
/// print line from app.py` (a verb of [`REMOVING`], a description of at most
/// [`MAX_DESCRIPTION`] words, a noun of [`LINE_NOUNS`] or none, and a repository file in the
/// same sentence), the description's words (`debug`, `print`) all appear in exactly one line
/// of the file as it was before the session (in one line or more after `all`, `every` or a
/// plural noun), and a line with all of them is there now. The 0.5B, asked to remove the
/// debug print line, rewrote app.py around it (`value` renamed, the debug print kept) and
/// said DONE. `originals` holds the first content of each file the session changed (as
/// [`crate::record::Tally`] keeps it); a file the session made, deleted, or whose first
/// content is not kept is not judged.
pub fn removal_left(
    task: &str,
    ws: &Workspace,
    changed: &[String],
    originals: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> Option<Left> {
    for range in sentence_bounds(task) {
        let sentence = &task[range];
        let code = code_spans(sentence);
        let spans = word_spans(sentence);
        let words: Vec<&str> = spans.iter().map(|(_, w)| *w).collect();
        for (k, verb) in words.iter().enumerate() {
            let lower = bare(verb).to_lowercase();
            if !REMOVING.contains(&lower.as_str()) {
                continue;
            }
            // Only a verb in the imperative asks for a removal: one inside a code span or
            // among a command's arguments (`python3 todo.py remove 3`, a subcommand the task
            // adds) names something, it asks nothing.
            if code.iter().any(|c| c.contains(&spans[k].0)) || !imperative(&words, k) {
                continue;
            }
            if k > 0 && NEGATIONS.contains(&bare(words[k - 1]).to_lowercase().as_str()) {
                continue;
            }
            let mut every = false;
            let mut j = k + 1;
            while let Some(w) = words.get(j)
                && DETERMINERS.contains(&bare(w).to_lowercase().as_str())
            {
                every |= matches!(
                    bare(w).to_lowercase().as_str(),
                    "all" | "every" | "each" | "any" | "these" | "those"
                );
                j += 1;
            }
            let start = j;
            let mut description: Vec<String> = Vec::new();
            let mut plural_noun = false;
            let mut end = j;
            while let Some(w) = words.get(j) {
                let b = bare(w);
                let lw = b.to_lowercase();
                if LINE_NOUNS.contains(&lw.as_str()) {
                    plural_noun = lw.ends_with('s');
                    end = j + 1;
                    break;
                }
                if matches!(lw.as_str(), "from" | "in" | "of" | "and" | "then")
                    || is_repo_file(ws, b)
                    || j - start >= MAX_DESCRIPTION
                {
                    break;
                }
                description.extend(tokens(b));
                j += 1;
                end = j;
            }
            description.sort();
            description.dedup();
            if description.is_empty() {
                continue;
            }
            let what = words[start..end]
                .iter()
                .map(|w| bare(w))
                .collect::<Vec<_>>()
                .join(" ");
            let files = words
                .iter()
                .map(|w| bare(w))
                .filter(|w| is_repo_file(ws, w));
            for file in files {
                let fits = |line: &str| {
                    let t = tokens(line);
                    description.iter().all(|d| t.contains(d))
                };
                let before = if changed.iter().any(|c| c == file) {
                    match originals.get(file) {
                        Some(Some(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
                        _ => continue,
                    }
                } else {
                    match ws.read(file).ok().flatten() {
                        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                        None => continue,
                    }
                };
                let n = before.lines().filter(|l| fits(l)).count();
                if n == 0 || (n > 1 && !(every || plural_noun)) {
                    continue;
                }
                let Some(now) = ws.read(file).ok().flatten() else {
                    continue;
                };
                let now = String::from_utf8_lossy(&now).into_owned();
                if let Some(line) = now.lines().find(|l| fits(l)) {
                    return Some(Left {
                        file: file.to_owned(),
                        what: what.clone(),
                        line: line.trim().to_owned(),
                    });
                }
            }
        }
    }
    None
}

/// Byte ranges of `text` inside backticks.
pub(crate) fn code_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if c == '`' {
            match open.take() {
                Some(start) => out.push(start..i + 1),
                None => open = Some(i),
            }
        }
    }
    out
}

/// Words after which a verb stands in the imperative, at the start of a clause: `Remove`,
/// `then remove`, `please remove`, `you should remove`, `need to remove`.
const BEFORE_IMPERATIVE: &[&str] = &[
    "and", "then", "please", "also", "to", "just", "you", "should", "must", "can", "could",
    "would", "now", "finally", "first", "next", "lastly", "so",
];

/// The word at `k` of `words` starts a clause as an imperative does: the sentence's first
/// word, after a word that ends a clause (`,` `;` `:`), or after [`BEFORE_IMPERATIVE`].
fn imperative(words: &[&str], k: usize) -> bool {
    let Some(prev) = k.checked_sub(1).map(|j| words[j]) else {
        return true;
    };
    prev.ends_with([',', ';', ':'])
        || BEFORE_IMPERATIVE.contains(&bare(prev).to_lowercase().as_str())
}

/// Words that let a script print nothing after the change: the task asks for all its
/// output, or all of some kind, to go. (`lines`, `prints`, `output` are not among them: a
/// task describes what is wrong in them, `prints two stray lines`.)
const SILENCING: &[&str] = &[
    "silence", "silent", "quiet", "quieter", "suppress", "mute", "all", "every",
];

/// Words that let a script print less after the change: then only a script that printed
/// two different lines or more must print something still (the one line it printed may be
/// the one to go).
const LESSENING: &[&str] = &[
    "remove", "removes", "delete", "deletes", "drop", "stop", "stops", "less", "fewer", "strip",
];

/// Words by which a task may ask a command of its own to print nothing at all.
const EMPTYING: &[&str] = &[
    "nothing", "empty", "only", "hide", "hides", "no", "none", "skip", "skips", "without",
];

/// Scripts at most this many are run alone.
const MAX_SCRIPTS: usize = 2;

/// The scripts `task` names that no command of it (`probes`) runs, each run alone by its
/// interpreter (`python3 textstats.py`), as probes whose output must not go
/// ([`Probe::plain`]): asked to make a demo run only when its module is run directly, the
/// 0.5B deleted the demo, and `python3 textstats.py` printed nothing. None when the task's
/// words let all output go ([`SILENCING`]). A run that fails or prints nothing before is
/// dropped ([`crate::found::keep_useful`]).
pub fn scripts_alone(task: &str, ws: &Workspace, probes: &[Probe]) -> Vec<Probe> {
    if plain_words(task)
        .iter()
        .any(|w| SILENCING.contains(&w.as_str()))
    {
        return Vec::new();
    }
    let mut out: Vec<Probe> = Vec::new();
    for (_, w) in word_spans(task) {
        let script = bare(w);
        let Some(interp) = crate::asks::interpreter(script) else {
            continue;
        };
        let argv = vec![interp.to_owned(), script.to_owned()];
        let ran = probes
            .iter()
            .chain(&out)
            .any(|p| p.argv.iter().any(|a| bare(a) == script));
        if ran || !is_repo_file(ws, script) || crate::probe::is_test(&argv) {
            continue;
        }
        if let Some(mut p) = Probe::to_keep(argv) {
            p.keep = false;
            p.plain = true;
            out.push(p);
        }
        if out.len() == MAX_SCRIPTS {
            break;
        }
    }
    out
}

/// The scripts run alone ([`scripts_alone`]), and the task's own commands where its words
/// let no output go ([`EMPTYING`]), that printed something and exited 0 before and print
/// nothing now: each with its runs before and now. Where `task` lets output lessen
/// ([`LESSENING`]), only a script that printed two different lines or more: the 0.5B, asked
/// to remove a debug print from app.py, removed the call that printed its result too.
pub fn output_lost<'r>(
    task: &str,
    probes: &[Probe],
    before: &'r [ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(&'r ProbeRun, &'r ProbeRun)> {
    let lessening = plain_words(task)
        .iter()
        .any(|w| LESSENING.contains(&w.as_str()));
    let distinct = |out: &str| {
        let mut lines: Vec<&str> = out
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines.sort_unstable();
        lines.dedup();
        lines.len()
    };
    // The task's own commands too, where nothing in its words lets output go: the 1.5B on
    // orders-newest-first wrote report.py back without the lines that run it, and
    // `python3 report.py`, which should list the orders in another order, printed nothing.
    let words = plain_words(task);
    let own_may_lessen = words.iter().any(|w| {
        SILENCING.contains(&w.as_str())
            || LESSENING.contains(&w.as_str())
            || EMPTYING.contains(&w.as_str())
    });
    probes
        .iter()
        .filter(|p| p.plain || (!own_may_lessen && !p.found && !p.keep && !p.sibling))
        .filter_map(|p| {
            let b = before.iter().find(|r| r.command == p.command)?;
            let n = now.iter().find(|r| r.command == p.command)?;
            let spoke = !b.timed_out
                && b.code == Some(0)
                && distinct(&b.output) >= if lessening { 2 } else { 1 };
            (spoke && !n.timed_out && n.output.trim().is_empty()).then_some((b, n))
        })
        .collect()
}

/// The observation of a DONE refused because a script the task names prints nothing now
/// (`output_lost`).
pub fn output_lost_refusal(lost: &[(&ProbeRun, &ProbeRun)]) -> crate::act::Observation {
    let output = crate::probe::before_and_now(lost);
    let names: Vec<&ProbeRun> = lost.iter().map(|(_, n)| *n).collect();
    crate::act::Observation::error(
        format!(
            "DONE refused: {} printed something before your change and prints nothing now; \
             the task does not ask for its output to go",
            crate::probe::command_names(&names)
        ),
        Some(
            "keep what the script does when it is run directly (move code under a condition \
             instead of deleting it), then DONE",
        ),
    )
    .with_output(output)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    const APP: &str = "def run():\n    value = 6 * 7\n    print(\"debug: value =\", value)\n    return value\n\n\nprint(run())\n";

    const PARAM_TASK: &str = "Add a parameter currency to format_price in money.py, defaulting to \"USD\". Then make invoice.py pass \"EUR\" and receipt.py pass \"GBP\".";
    const MONEY_NEW: &str =
        "def format_price(amount, currency=\"USD\"):\n    return f\"{amount:.2f} {currency}\"\n";
    const RECEIPT_NEW: &str = "import money\n\n\ndef total_line(amounts):\n    return \"Total \" + money.format_price(sum(amounts), \"GBP\")\n";

    #[test]
    fn a_value_the_task_says_a_file_passes_must_be_in_its_calls() {
        // The 1.5B's reading: invoice_line grew a parameter of its own, and "EUR" went to
        // the demo's call of invoice_line alone. Refused, the call that lacks it shown.
        let wrong = "from money import format_price\n\n\ndef invoice_line(item, amount, currency=\"USD\"):\n    return f\"{item}: {format_price(amount, currency)}\"\n\n\nif __name__ == \"__main__\":\n    print(invoice_line(\"widget\", 3.5, currency=\"EUR\"))\n";
        let (_dir, ws) = repo(&[
            ("money.py", MONEY_NEW),
            ("invoice.py", wrong),
            ("receipt.py", RECEIPT_NEW),
        ]);
        let np = value_not_passed(PARAM_TASK, &ws).unwrap();
        assert_eq!(np.file, "invoice.py");
        assert_eq!(np.function, "format_price");
        assert_eq!(np.text, "EUR");
        assert_eq!(np.call, "format_price(amount, currency)");

        // Passed in the call, by a module constant, or by a default of the enclosing
        // function's own signature: each carries it.
        for right in [
            "from money import format_price\n\n\ndef invoice_line(item, amount):\n    return f\"{item}: {format_price(amount, 'EUR')}\"\n",
            "from money import format_price\n\nCURRENCY = \"EUR\"\n\n\ndef invoice_line(item, amount):\n    return f\"{item}: {format_price(amount, currency=CURRENCY)}\"\n",
            "from money import format_price\n\n\ndef invoice_line(item, amount, currency=\"EUR\"):\n    return f\"{item}: {format_price(amount, currency)}\"\n",
        ] {
            ws.write_atomic("invoice.py", right.as_bytes()).unwrap();
            assert_eq!(value_not_passed(PARAM_TASK, &ws), None, "{right}");
        }

        // receipt.py's call through the module, still without "GBP": refused.
        ws.write_atomic(
            "receipt.py",
            b"import money\n\n\ndef total_line(amounts):\n    return \"Total \" + money.format_price(sum(amounts))\n",
        )
        .unwrap();
        let np = value_not_passed(PARAM_TASK, &ws).unwrap();
        assert_eq!(
            (np.file.as_str(), np.call.as_str()),
            ("receipt.py", "format_price(sum(amounts))")
        );
    }

    #[test]
    fn no_call_is_judged_without_a_parameter_a_function_and_a_pass() {
        let invoice = "from money import format_price\nprint(format_price(3))\n";
        let (_dir, ws) = repo(&[("money.py", MONEY_NEW), ("invoice.py", invoice)]);
        for task in [
            // No parameter word: which function the value is for is not said.
            "Make invoice.py pass \"EUR\" to the price formatter.",
            // No function named where the parameter is.
            "Add a currency parameter in money.py. Then make invoice.py pass \"EUR\".",
            // The value is given, not passed: literal_missing's business.
            "Add a parameter currency to format_price in money.py. Then make invoice.py use \"EUR\".",
            // The file named does not call the function.
            "Add a parameter currency to format_price in money.py. Then make money.py pass \"EUR\".",
        ] {
            assert_eq!(value_not_passed(task, &ws), None, "{task}");
        }
        assert!(value_not_passed(PARAM_TASK, &ws).is_some());
    }

    #[test]
    fn a_line_the_task_removes_must_be_gone() {
        let (_dir, ws) = repo(&[("app.py", APP)]);
        let task = "Remove the debug print line from app.py.";
        let changed = vec!["app.py".to_owned()];
        let originals = std::collections::BTreeMap::from([(
            "app.py".to_owned(),
            Some(APP.as_bytes().to_vec()),
        )]);
        // Renamed around it, the debug print kept: refused, the line shown.
        ws.write_atomic(
            "app.py",
            b"def run():\n    result = 6 * 7\n    print(\"debug: result =\", result)\n    return result\n\n\nprint(run())\n",
        )
        .unwrap();
        let left = removal_left(task, &ws, &changed, &originals).unwrap();
        assert_eq!(left.file, "app.py");
        assert_eq!(left.what, "debug print line");
        assert_eq!(left.line, "print(\"debug: result =\", result)");
        // Gone, the result's print kept: taken.
        ws.write_atomic(
            "app.py",
            b"def run():\n    value = 6 * 7\n    return value\n\n\nprint(run())\n",
        )
        .unwrap();
        assert_eq!(removal_left(task, &ws, &changed, &originals), None);

        // One word fitting two lines, with a singular noun: which one is meant is not
        // known, so nothing is judged; with `all`, every such line must go.
        let (_dir, ws) = repo(&[("app.py", APP)]);
        let none = std::collections::BTreeMap::new();
        assert_eq!(
            removal_left("Remove the print line from app.py.", &ws, &[], &none),
            None
        );
        let all = removal_left("Remove all print calls from app.py.", &ws, &[], &none).unwrap();
        assert_eq!(
            (all.what.as_str(), all.line.as_str()),
            ("print calls", "print(\"debug: value =\", value)")
        );
        // Not asked to remove, a description no line fits, a negated verb, no file named:
        // nothing.
        for task in [
            "Keep the debug print line in app.py.",
            "Remove the logging line from app.py.",
            "Do not remove the debug print line from app.py.",
            "Remove the debug print line.",
        ] {
            assert_eq!(removal_left(task, &ws, &[], &none), None, "{task}");
        }
        // A removing verb that names a subcommand in an example, or stands inside a command,
        // asks nothing (a task adding a `remove` command with `print` lines in app.py).
        for task in [
            "Add a `remove` command to app.py: `python3 app.py remove debug print` drops one.",
            "Add a subcommand so that python3 app.py remove debug print line works in app.py.",
            "app.py should accept `delete debug print` as well.",
        ] {
            assert_eq!(removal_left(task, &ws, &[], &none), None, "{task}");
        }
        // A changed file whose first content is not kept is not judged.
        assert_eq!(
            removal_left(
                "Remove the debug print line from app.py.",
                &ws,
                &changed,
                &none
            ),
            None
        );
    }

    #[test]
    fn a_value_the_task_gives_a_file_must_be_in_that_file() {
        let (_dir, ws) = repo(&[
            ("money.py", "def format_price(x):\n    return f'{x:.2f}'\n"),
            (
                "invoice.py",
                "from money import format_price\nformat_price(3)\n",
            ),
            (
                "receipt.py",
                "from money import format_price\nformat_price(4)\n",
            ),
        ]);
        let task = "Add a parameter currency to format_price in money.py, defaulting to \"USD\". \
                    Then make invoice.py pass \"EUR\" and receipt.py pass \"GBP\".";
        let lits = literals(task, &ws);
        let shown: Vec<(&str, Vec<&str>)> = lits
            .iter()
            .map(|l| {
                (
                    l.text.as_str(),
                    l.files.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                ("USD", vec![]),
                ("EUR", vec!["invoice.py"]),
                ("GBP", vec!["receipt.py"]),
            ]
        );
        assert_eq!(literal_missing(task, &ws).unwrap().text, "USD");
        ws.write_atomic(
            "money.py",
            b"def format_price(x, currency=\"USD\"):\n    return f'{x:.2f} {currency}'\n",
        )
        .unwrap();
        // money.py alone changed: invoice.py does not pass "EUR".
        let missing = literal_missing(task, &ws).unwrap();
        assert_eq!(
            (missing.text.as_str(), missing.files),
            ("EUR", vec!["invoice.py".to_owned()])
        );
        // "EUR" put in money.py instead is not in invoice.py either.
        ws.write_atomic(
            "invoice.py",
            b"from money import format_price\nformat_price(3, \"EUR\")\n",
        )
        .unwrap();
        assert_eq!(literal_missing(task, &ws).unwrap().text, "GBP");
        ws.write_atomic(
            "receipt.py",
            b"from money import format_price\nformat_price(4, 'GBP')\n",
        )
        .unwrap();
        assert_eq!(literal_missing(task, &ws), None);
    }

    #[test]
    fn quoted_output_old_values_paths_and_negations_give_nothing() {
        let (_dir, ws) = repo(&[("app.py", "PORT = 8080\n")]);
        let none = |task: &str| assert_eq!(literals(task, &ws), vec![], "{task}");
        none("`python3 app.py` prints \"Hello\" twice; make it print it once.");
        none("`sh linecount.sh 'a b.txt'` fails with \"cat: a: No such file or directory\".");
        none("Change the greeting in app.py so it says \"hi\".");
        none("Write the settings to \"config.json\".");
        none("Move the data to \"data/\".");
        none("Do not pass \"x\" to app.py.");
        none("Rename \"colour\" in app.py.");
        none("Set the title to \"Hello world\" in app.py.");
        // The old value is left out; the new one, tied to the file its sentence names, kept.
        let lits = literals("Change the port in app.py from \"8080\" to \"9090\".", &ws);
        assert_eq!(
            lits,
            vec![Literal {
                text: "9090".to_owned(),
                files: vec!["app.py".to_owned()]
            }]
        );
        // With no file named, any file of code may hold it, prose aside.
        ws.write_atomic("notes.md", b"use utf-8\n").unwrap();
        let task = "Open files with `encoding=\"utf-8\"`.";
        assert_eq!(literal_missing(task, &ws).unwrap().text, "utf-8");
        ws.write_atomic("app.py", b"open('a', encoding='utf-8')\n")
            .unwrap();
        assert_eq!(literal_missing(task, &ws), None);
    }

    #[test]
    fn a_named_file_left_alone_while_another_changed_is_told() {
        let (_dir, ws) = repo(&[
            ("app.py", "print('debug')\nprint(1)\n"),
            ("test_app.py", "import app\n"),
        ]);
        let changed = |c: &[&str]| c.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let task = "Remove the debug print line from app.py.";
        let new = |c: &[&str]| {
            let c = changed(c);
            named_unchanged(task, &ws, (&c, &c), &[])
        };
        assert_eq!(
            new(&["files.txt"]),
            Some((vec!["app.py".to_owned()], vec!["files.txt".to_owned()]))
        );
        // app.py changed, or another file that was there: no refusal.
        let (app, lib) = (changed(&["app.py"]), changed(&["lib.py"]));
        assert_eq!(named_unchanged(task, &ws, (&app, &[]), &[]), None);
        assert_eq!(named_unchanged(task, &ws, (&lib, &[]), &[]), None);
        assert_eq!(new(&[]), None);
        // A test the task names, a command it runs, and a task a new file may do, are not.
        let only_new = |t: &str, probes: &[Probe]| {
            let c = changed(&["lib.py"]);
            named_unchanged(t, &ws, (&c, &c), probes)
        };
        assert_eq!(only_new("test_app.py fails: fix the bug.", &[]), None);
        let t = "`python3 app.py` crashes; fix it.";
        let probes = crate::probe::commands(t, &ws, None);
        assert_eq!(only_new(t, &probes), None);
        // A script the session runs of its own accord is still a file the task names.
        let alone = Probe::to_keep(vec!["python3".into(), "app.py".into()]).unwrap();
        assert!(only_new("Fix app.py.", &[alone]).is_some());
        assert_eq!(only_new("Add a unit test for app.py.", &[]), None);
        // A new file the task names is what it asks for.
        assert_eq!(only_new("Move the helpers of app.py to lib.py.", &[]), None);
        // Any file the task names counts: a line added to .gitignore is not a new README.md.
        ws.write_atomic(".gitignore", b"build/\n").unwrap();
        let readme = changed(&["README.md"]);
        assert_eq!(
            named_unchanged(
                "Add the line *.log at the end of .gitignore.",
                &ws,
                (&readme, &readme),
                &[]
            ),
            Some((vec![".gitignore".to_owned()], readme.clone()))
        );
        // The pattern the line holds is not a file the task names: a new `.log` is refused.
        let dot_log = changed(&["README.md", ".log"]);
        assert_eq!(
            named_unchanged(
                "Add the line *.log at the end of .gitignore.",
                &ws,
                (&dot_log, &dot_log),
                &[]
            ),
            Some((vec![".gitignore".to_owned()], dot_log.clone()))
        );
        // Emphasis around a file's name still names it.
        assert_eq!(bare("*.gitignore*,"), ".gitignore");
        assert_eq!(bare("**`app.py`**."), "app.py");
        assert_eq!(bare("`*.log`"), "*.log");
    }

    #[test]
    fn scripts_the_task_names_are_run_alone_unless_output_may_go() {
        let (_dir, ws) = repo(&[
            ("report.py", "import textstats\nprint('report')\n"),
            ("textstats.py", "print('words: 3')\n"),
            ("test_report.py", "assert True\n"),
        ]);
        let probes = crate::probe::commands(
            "`python3 report.py` prints stray lines because importing textstats.py runs its \
             demo. Make the demo run only when textstats.py is run directly; test_report.py \
             must pass.",
            &ws,
            None,
        );
        let task = "`python3 report.py` prints stray lines because importing textstats.py runs \
                    its demo. Make the demo run only when textstats.py is run directly; \
                    test_report.py must pass.";
        let alone = scripts_alone(task, &ws, &probes);
        let cmds: Vec<&str> = alone.iter().map(|p| p.command.as_str()).collect();
        assert_eq!(cmds, ["python3 textstats.py"]);
        assert!(alone[0].plain && !alone[0].keep);
        assert!(scripts_alone("Silence textstats.py.", &ws, &[]).is_empty());

        let run = |output: &str, code| ProbeRun {
            command: "python3 textstats.py".to_owned(),
            code: Some(code),
            timed_out: false,
            output: output.to_owned(),
        };
        let before = [run("words: 3\n", 0)];
        assert_eq!(output_lost(task, &alone, &before, &[run("", 0)]).len(), 1);
        assert!(output_lost(task, &alone, &before, &[run("words: 3\n", 0)]).is_empty());
        // It printed nothing before: nothing to lose.
        assert!(output_lost(task, &alone, &[run(" \n", 0)], &[run("", 0)]).is_empty());
        // A task that removes something may take a script's one line, not all of two.
        let remove = "Remove the debug print from textstats.py.";
        assert!(output_lost(remove, &alone, &before, &[run("", 0)]).is_empty());
        let two = [run("debug: 3\n3\n", 0)];
        assert_eq!(output_lost(remove, &alone, &two, &[run("", 0)]).len(), 1);
        assert!(output_lost(remove, &alone, &two, &[run("3\n", 0)]).is_empty());
        let obs = output_lost_refusal(&output_lost(task, &alone, &before, &[run("", 0)]));
        assert!(
            obs.summary.contains("`python3 textstats.py`"),
            "{}",
            obs.summary
        );
    }

    #[test]
    fn a_file_the_task_says_to_update_must_change() {
        let (_dir, ws) = repo(&[("README.md", "# r\n"), ("resize.py", "print(1)\n")]);
        let changed = |c: &[&str]| c.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let task = "The usage section of README.md is out of date. Update README.md to match \
                    the options resize.py accepts.";
        assert_eq!(
            object_unchanged(task, &ws, &changed(&["resize.py"])),
            Some("README.md".to_owned())
        );
        assert_eq!(object_unchanged(task, &ws, &changed(&["README.md"])), None);
        let none = |t: &str| object_unchanged(t, &ws, &changed(&["resize.py"]));
        assert_eq!(
            none("Update the file README.md."),
            Some("README.md".to_owned())
        );
        assert_eq!(none("Fix the typo in README.md."), None);
        assert_eq!(none("Do not edit README.md; fix resize.py."), None);
        assert_eq!(
            none("Update docs.md."),
            None,
            "not a file of the repository"
        );
    }
}
