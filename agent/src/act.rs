//! Acting on one proposal, each side effect a value first: [`plan`] turns an action into a
//! [`Plan`] (a read's result, or a preview — diff or argv — carrying the sha256 of every file
//! it read), and [`commit`] re-checks those hashes (and each SEARCH) before writing atomically.
//!
//! Observations are written for a small model: a READ numbers its lines (as
//! [`numbered`] does; the numbers are not part of the file), an empty result says so, every
//! error says what to do next, and a SEARCH that does not match shows the file's closest
//! lines. SEARCH text is matched exactly, then with named, counted tolerances
//! ([`apply_blocks`]), each of which must find exactly one place.

use std::fmt::Write;

use codec::{Action, Block};
use sha2::{Digest, Sha256};

use crate::workspace::{Workspace, WorkspaceError};

/// What the model is told about one action.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Observation {
    pub ok: bool,
    pub summary: String,
    pub output: String,
    pub hint: Option<String>,
}

impl Observation {
    pub fn ok(summary: impl Into<String>, output: impl Into<String>) -> Observation {
        Observation {
            ok: true,
            summary: summary.into(),
            output: output.into(),
            hint: None,
        }
    }

    pub fn error(summary: impl Into<String>, hint: Option<&str>) -> Observation {
        Observation {
            ok: false,
            summary: summary.into(),
            output: String::new(),
            hint: hint.map(str::to_owned),
        }
    }

    /// The same observation showing `output`.
    pub fn with_output(mut self, output: impl Into<String>) -> Observation {
        self.output = output.into();
        self
    }

    /// The same observation with `hint`.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Observation {
        self.hint = Some(hint.into());
        self
    }
}

impl From<WorkspaceError> for Observation {
    fn from(e: WorkspaceError) -> Observation {
        let hint = match &e {
            WorkspaceError::Io { .. } => "check the path with LIST or GLOB, or try another way",
            WorkspaceError::EmptyArgv => "write RUN then the program and its arguments",
            WorkspaceError::Unconfinable(_) | WorkspaceError::Sandbox(_) => {
                "commands cannot run here: change files with EDIT or CREATE instead"
            }
            _ => "use a path relative to the repository root, inside it",
        };
        Observation::error(e.to_string(), Some(hint))
    }
}

/// A file's permission bits (`None` when it does not exist). Setuid, setgid and sticky bits
/// are not kept: a file the agent writes, moves or restores never gains them, and undo
/// refuses a journal record that has them.
fn permissions(ws: &Workspace, path: &str) -> Option<u32> {
    ws.mode(path).map(|m| m & crate::workspace::PERMISSION_BITS)
}

/// One file before and after a change. `None` means absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub pre: Option<Vec<u8>>,
    pub post: Option<Vec<u8>>,
    /// The mode bits of the file as it was (journaled, so undo restores them).
    pub pre_mode: Option<u32>,
    /// The mode bits to give a new file (a MOVE's target takes its source's); an existing
    /// file keeps its own.
    pub post_mode: Option<u32>,
}

impl FileChange {
    pub fn pre_sha(&self) -> Option<String> {
        self.pre.as_deref().map(sha256)
    }
    pub fn post_sha(&self) -> Option<String> {
        self.post.as_deref().map(sha256)
    }
}

/// What acting on an action will do, before anything is done.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// A read-only action, already answered.
    Observed(Observation),
    /// File changes (edit, create, delete, move, mkdir) and their unified diff.
    Change {
        /// What the observation says once it is committed, e.g. `changed a.py`.
        summary: String,
        diff: String,
        changes: Vec<FileChange>,
        dirs: Vec<String>,
        /// Repairs made to match SEARCH text (named, counted), e.g. `search_whitespace`.
        repairs: Vec<&'static str>,
    },
    /// A command to run.
    Run { argv: Vec<String> },
    /// The model says it is finished.
    Done { summary: String },
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The most lines a file may have for `CREATE` to replace it whole; a longer one is changed
/// with EDIT blocks.
pub const WHOLE_FILE_LINES: usize = 200;

/// The separator between a line's number and its text in READ's output.
pub const NUMBER_SEPARATOR: &str = "| ";

/// Lines shown after a READ past the end of a file: its last ones.
const TAIL_LINES: usize = 10;

/// The width of line numbers for a file of `total` lines: its digits, at least 3, so that
/// every line of one READ lines up.
pub fn number_width(total: usize) -> usize {
    total.max(1).to_string().len().max(3)
}

/// `lines` numbered from `first` as READ shows them: the number right-aligned in `width`
/// columns, then [`NUMBER_SEPARATOR`] (without its space before an empty line), then the
/// text as it is.
pub fn numbered<'l>(
    lines: impl IntoIterator<Item = &'l str>,
    first: usize,
    width: usize,
) -> String {
    let mut out = String::new();
    for (k, line) in lines.into_iter().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        // An empty line shows no separator's space, so that no line ends in a space the file
        // does not have.
        let sep = match line.is_empty() {
            true => NUMBER_SEPARATOR.trim_end(),
            false => NUMBER_SEPARATOR,
        };
        let _ = write!(out, "{:>width$}{sep}{line}", first + k);
        out.push('\n');
    }
    out
}

/// Plans `action`: reads happen now (they change nothing); changes are previewed.
pub fn plan(ws: &Workspace, action: &Action) -> Result<Plan, Observation> {
    let text = |rel: &str| -> Result<Option<String>, Observation> {
        match ws.read(rel)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b).map(Some).map_err(|_| {
                Observation::error(
                    format!("{rel} is not UTF-8 text"),
                    Some("it is not a text file the agent can read or edit; pick another file"),
                )
            }),
        }
    };
    let change = |summary: Option<String>,
                  changes: Vec<FileChange>,
                  dirs: Vec<String>,
                  repairs: Vec<&'static str>| {
        let diff = changes
            .iter()
            .map(|c| {
                let pre = c.pre.as_deref().map(String::from_utf8_lossy);
                let post = c.post.as_deref().map(String::from_utf8_lossy);
                crate::diff::unified(&c.path, pre.as_deref(), post.as_deref())
            })
            .collect::<String>();
        let paths: Vec<&str> = changes
            .iter()
            .map(|c| c.path.as_str())
            .chain(dirs.iter().map(String::as_str))
            .collect();
        Plan::Change {
            summary: summary.unwrap_or_else(|| format!("changed {}", paths.join(", "))),
            diff,
            changes,
            dirs,
            repairs,
        }
    };
    match action {
        Action::Read { path, start, end } => {
            let content = text(path)?.ok_or_else(|| missing(path))?;
            read(path, &content, *start, *end).map(Plan::Observed)
        }
        Action::List { path } => {
            let dir = if path.is_empty() || path == "." {
                ws.root().to_path_buf()
            } else {
                ws.resolve(path)?
            };
            let entries = std::fs::read_dir(&dir).map_err(|e| {
                Observation::error(
                    format!("{path}: {e}"),
                    Some("LIST . shows the top-level entries; GLOB finds files by name"),
                )
            })?;
            let mut names: Vec<String> = entries
                .flatten()
                .filter(|e| !crate::workspace::is_private(&e.file_name()))
                .map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        n + "/"
                    } else {
                        n
                    }
                })
                .collect();
            names.sort();
            let shown = if path.is_empty() { "." } else { path };
            if names.is_empty() {
                return Ok(Plan::Observed(
                    Observation::ok(format!("{shown}: empty directory, no entries"), "")
                        .with_hint("LIST . shows the top-level entries"),
                ));
            }
            Ok(Plan::Observed(Observation::ok(
                format!("{shown}: {} entries", names.len()),
                names.join("\n"),
            )))
        }
        Action::Glob { pattern } => {
            let files: Vec<String> = ws
                .files("")?
                .into_iter()
                .filter(|f| crate::workspace::glob_match(pattern, f))
                .collect();
            if files.is_empty() {
                return Ok(Plan::Observed(
                    Observation::ok(format!("0 files match {pattern}, no output"), "").with_hint(
                        "a pattern without / matches file names at any depth, e.g. *.py; \
                         LIST shows what is there",
                    ),
                ));
            }
            Ok(Plan::Observed(Observation::ok(
                format!("{} files match {pattern}", files.len()),
                files.join("\n"),
            )))
        }
        Action::Grep { pattern, path } => {
            let mut hits = Vec::new();
            for f in ws.files(path.as_deref().unwrap_or(""))? {
                let Ok(Some(t)) = text(&f) else { continue };
                for (i, line) in t.lines().enumerate() {
                    if line.contains(pattern.as_str()) {
                        hits.push(format!("{f}:{}: {line}", i + 1));
                    }
                }
            }
            if hits.is_empty() {
                return Ok(Plan::Observed(
                    Observation::ok(format!("0 matches for {pattern:?}, no output"), "").with_hint(
                        "GREP matches the exact text, case included: try a shorter part of \
                             it, or GLOB for file names",
                    ),
                ));
            }
            Ok(Plan::Observed(Observation::ok(
                format!("{} matching lines for {pattern:?}", hits.len()),
                hits.join("\n"),
            )))
        }
        Action::Run { argv } => Ok(Plan::Run { argv: argv.clone() }),
        Action::Done { summary } => Ok(Plan::Done {
            summary: summary.clone(),
        }),
        Action::Mkdir { path } => {
            ws.resolve(path)?;
            Ok(change(None, Vec::new(), vec![path.clone()], Vec::new()))
        }
        Action::Delete { path } => {
            let pre = ws.read(path)?.ok_or_else(|| missing(path))?;
            let changes = vec![FileChange {
                path: path.clone(),
                pre: Some(pre),
                post: None,
                pre_mode: permissions(ws, path),
                post_mode: None,
            }];
            Ok(change(None, changes, Vec::new(), Vec::new()))
        }
        Action::Move { from, to } => {
            let pre = ws.read(from)?.ok_or_else(|| missing(from))?;
            if ws.read(to)?.is_some() {
                return Err(Observation::error(
                    format!("{to} already exists"),
                    Some("DELETE it first, or move to a new path"),
                ));
            }
            // The moved file keeps its permission bits (an executable script stays
            // executable). The target is written first and the source removed after, so that
            // a failure between the two never leaves the file in neither place.
            let mode = permissions(ws, from);
            let changes = vec![
                FileChange {
                    path: to.clone(),
                    pre: None,
                    post: Some(pre.clone()),
                    pre_mode: None,
                    post_mode: mode,
                },
                FileChange {
                    path: from.clone(),
                    pre: Some(pre),
                    post: None,
                    pre_mode: mode,
                    post_mode: None,
                },
            ];
            Ok(change(None, changes, Vec::new(), Vec::new()))
        }
        Action::Create { path, content } => {
            not_a_directory(ws, path)?;
            // A small model rewrites a small file whole more reliably than it copies SEARCH
            // lines: CREATE on an existing file of at most WHOLE_FILE_LINES lines replaces it
            // (previewed and journaled with its pre-image like any edit).
            let (pre, summary) = match text(path)? {
                None => (None, None),
                Some(old) => {
                    let n = old.lines().count();
                    if n > WHOLE_FILE_LINES {
                        return Err(Observation::error(
                            format!(
                                "{path} already exists and has {n} lines, more than \
                                 {WHOLE_FILE_LINES}: too long to replace whole"
                            ),
                            Some("change it with EDIT and SEARCH/REPLACE blocks"),
                        ));
                    }
                    let summary = format!(
                        "replaced the whole file {path} ({n} lines before, {} now)",
                        content.lines().count()
                    );
                    (Some(old), Some(summary))
                }
            };
            if pre.as_deref() == Some(content.as_str()) {
                return Err(unchanged(path, "the new content is the file as it is"));
            }
            let changes = vec![FileChange {
                path: path.clone(),
                pre_mode: pre.as_ref().and_then(|_| permissions(ws, path)),
                pre: pre.map(String::into_bytes),
                post: Some(content.clone().into_bytes()),
                post_mode: None,
            }];
            Ok(change(summary, changes, Vec::new(), Vec::new()))
        }
        Action::Edit { path, blocks } => {
            not_a_directory(ws, path)?;
            let pre = text(path)?;
            let (post, repairs) = apply_blocks(path, pre.as_deref(), blocks)?;
            if pre.as_deref() == Some(post.as_str()) {
                return Err(unchanged(path, "each REPLACE equals its SEARCH"));
            }
            let changes = vec![FileChange {
                path: path.clone(),
                pre: pre.map(String::into_bytes),
                post: Some(post.into_bytes()),
                pre_mode: permissions(ws, path),
                post_mode: None,
            }];
            Ok(change(None, changes, Vec::new(), repairs))
        }
        Action::Client { name, .. } => Err(Observation::error(
            format!("unknown tool {name:?}"),
            Some("use the commands listed in the instructions"),
        )),
    }
}

fn missing(path: &str) -> Observation {
    Observation::error(
        format!("{path} does not exist"),
        Some("LIST or GLOB to find the right path"),
    )
}

fn unchanged(path: &str, why: &str) -> Observation {
    Observation::error(
        format!("nothing to change: {why}, so {path} would stay as it is"),
        Some("put the new text in REPLACE (or in CREATE's block), different from what is there"),
    )
}

/// READ's answer: lines `start..=end` (1-based; the whole file when both are absent),
/// numbered. A range past the end or reversed is an error that shows the file's real extent.
fn read(
    path: &str,
    content: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<Observation, Observation> {
    let lines: Vec<&str> = content.lines().collect();
    let total = lines.len();
    let width = number_width(total);
    let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    if total == 0 {
        return Ok(Observation::ok(
            format!("{path} is empty (0 lines, no output)"),
            "",
        ));
    }
    let a = start.map_or(1, clamp).max(1);
    let b = end.map_or(total, clamp);
    if a > b {
        return Err(Observation::error(
            format!("READ {path}:{a}-{b} asks for a range that ends before it starts"),
            Some(&format!(
                "write the first line number before the last, e.g. READ {path}:{b}-{a}; \
                 {path} has {total} lines"
            )),
        ));
    }
    if a > total {
        let from = total.saturating_sub(TAIL_LINES);
        return Err(Observation::error(
            format!("{path} has {total} lines; line {a} is past its end. Its last lines are shown"),
            Some(&format!(
                "READ {path} shows the whole file; a range must lie within 1-{total}"
            )),
        )
        .with_output(numbered(lines[from..].iter().copied(), from + 1, width)));
    }
    let b = b.min(total);
    let summary = match (start, end) {
        (None, None) => format!("{path} ({total} lines)"),
        _ if b == total && end.is_some_and(|e| clamp(e) > total) => {
            format!("{path} lines {a}-{b} of {total} (the file ends at line {total})")
        }
        _ => format!("{path} lines {a}-{b} of {total}"),
    };
    Ok(Observation::ok(
        summary,
        numbered(lines[a - 1..b].iter().copied(), a, width),
    ))
}

/// Applies SEARCH/REPLACE blocks in order. An empty SEARCH appends (or creates a missing
/// file). A SEARCH must match exactly once at line starts. When it matches nowhere, it is
/// matched line by line with the tolerances of [`Tolerance`] and [`Variant`] — least first,
/// each named and returned as a repair — and the first that finds a place must find exactly
/// one. Several places are refused with the candidates shown; none, with the file's closest
/// lines. Nothing is guessed.
pub fn apply_blocks(
    path: &str,
    pre: Option<&str>,
    blocks: &[Block],
) -> Result<(String, Vec<&'static str>), Observation> {
    let mut content = pre.unwrap_or("").to_owned();
    let mut repairs = Vec::new();
    for (n, b) in blocks.iter().enumerate() {
        if b.search.is_empty() {
            if !content.is_empty() && !content.ends_with('\n') {
                content.push('\n');
            }
            content.push_str(&b.replace);
            continue;
        }
        if pre.is_none() {
            return Err(missing(path));
        }
        let exact: Vec<usize> = content
            .match_indices(b.search.as_str())
            .map(|(i, _)| i)
            .filter(|&i| i == 0 || content.as_bytes()[i - 1] == b'\n')
            .collect();
        match exact.as_slice() {
            [i] => content.replace_range(*i..*i + b.search.len(), &b.replace),
            [] => {
                let found = tolerant(&content, b).map_err(|miss| miss.observation(path, n))?;
                repairs.extend(found.repairs);
                content.replace_range(found.span, &found.replace);
            }
            many => {
                let lines: Vec<usize> = many
                    .iter()
                    .map(|&i| content[..i].matches('\n').count())
                    .collect();
                let m = b.search.lines().count().max(1);
                return Err(Miss::Ambiguous {
                    lines: split_lines(&content),
                    starts: lines,
                    len: m,
                    repairs: Vec::new(),
                }
                .observation(path, n));
            }
        }
    }
    Ok((content, repairs))
}

/// How a SEARCH is compared with a run of the file's lines once the exact match failed,
/// least tolerant first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tolerance {
    /// Equal once trailing whitespace (a `\r` included) is ignored.
    TrailingWhitespace,
    /// Every line indented by the same amount more or less; REPLACE is shifted to match.
    Indentation,
    /// Equal once every run of whitespace counts as one space (REPLACE is taken as written).
    Whitespace,
}

impl Tolerance {
    const ALL: [Tolerance; 3] = [
        Tolerance::TrailingWhitespace,
        Tolerance::Indentation,
        Tolerance::Whitespace,
    ];
}

/// A SEARCH/REPLACE pair as lines, after the rewrites that `repairs` name.
#[derive(Debug, Clone)]
struct Variant {
    search: Vec<String>,
    replace: Vec<String>,
    repairs: Vec<&'static str>,
}

/// The variants of a block to try, the block as written first: READ's line numbers
/// stripped (`search_line_numbers`, only when every SEARCH line carries one, in sequence) and
/// leading and trailing blank lines dropped (`search_blank_lines`), alone and together.
fn variants(b: &Block) -> Vec<Variant> {
    let base = Variant {
        search: b.search.lines().map(str::to_owned).collect(),
        replace: b.replace.lines().map(str::to_owned).collect(),
        repairs: Vec::new(),
    };
    let mut out = vec![base.clone()];
    if let Some(v) = strip_numbers(&base) {
        out.push(v);
    }
    let blank: Vec<Variant> = out.iter().filter_map(strip_blank_lines).collect();
    out.extend(blank);
    out
}

/// `line` without a READ prefix (`  12| `), and the number, when it has one.
fn number_prefix(line: &str) -> Option<(usize, &str)> {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n = rest[..digits].parse().ok()?;
    let text = rest[digits..].strip_prefix('|')?;
    Some((n, text.strip_prefix(' ').unwrap_or(text)))
}

fn strip_numbers(v: &Variant) -> Option<Variant> {
    let stripped: Vec<(usize, &str)> = v
        .search
        .iter()
        .map(|l| number_prefix(l))
        .collect::<Option<_>>()?;
    let first = stripped.first()?.0;
    if stripped
        .iter()
        .enumerate()
        .any(|(k, (n, _))| *n != first + k)
    {
        return None;
    }
    // REPLACE lines copied from READ carry the prefix too; lines the model wrote new may not.
    let replace = v
        .replace
        .iter()
        .map(|l| number_prefix(l).map_or(l.as_str(), |(_, t)| t).to_owned())
        .collect();
    let mut repairs = v.repairs.clone();
    repairs.push("search_line_numbers");
    Some(Variant {
        search: stripped.into_iter().map(|(_, t)| t.to_owned()).collect(),
        replace,
        repairs,
    })
}

fn strip_blank_lines(v: &Variant) -> Option<Variant> {
    let blank = |l: &String| l.trim().is_empty();
    let lead = v.search.iter().take_while(|l| blank(l)).count();
    if lead == v.search.len() {
        return None;
    }
    let trail = v.search.iter().rev().take_while(|l| blank(l)).count();
    if lead + trail == 0 {
        return None;
    }
    // The same blank lines around REPLACE go too, so that the blank lines the file has stay.
    let r_lead = v.replace.iter().take_while(|l| blank(l)).count().min(lead);
    let rest = &v.replace[r_lead..];
    let r_trail = rest
        .iter()
        .rev()
        .take_while(|l| blank(l))
        .count()
        .min(trail);
    let mut repairs = v.repairs.clone();
    repairs.push("search_blank_lines");
    Some(Variant {
        search: v.search[lead..v.search.len() - trail].to_vec(),
        replace: rest[..rest.len() - r_trail].to_vec(),
        repairs,
    })
}

/// A run of the file's lines a variant matched, and how REPLACE must be shifted there.
#[derive(Debug, Clone)]
struct Hit {
    start: usize,
    shift: Shift,
    /// The lines matched byte for byte (line ends aside): no whitespace repair to record.
    exact: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Shift {
    None,
    /// Prepend this to every non-blank REPLACE line.
    Add(String),
    /// Remove this much leading whitespace from every non-blank REPLACE line.
    Remove(usize),
}

/// The file's lines, each with its line end.
fn split_lines(content: &str) -> Vec<&str> {
    content.split_inclusive('\n').collect()
}

/// A line without its `\n` (a `\r` kept).
fn no_newline(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

fn leading(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Where `want` matches `lines` under `tolerance`.
fn hits(lines: &[&str], want: &[String], tolerance: Tolerance) -> Vec<Hit> {
    if want.is_empty() || want.len() > lines.len() {
        return Vec::new();
    }
    let norm = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    (0..=lines.len() - want.len())
        .filter_map(|s| {
            let window = &lines[s..s + want.len()];
            let exact = window
                .iter()
                .zip(want)
                .all(|(f, w)| no_newline(f) == w.as_str());
            let shift = match tolerance {
                Tolerance::TrailingWhitespace => window
                    .iter()
                    .zip(want)
                    .all(|(f, w)| f.trim_end() == w.trim_end())
                    .then_some(Shift::None)?,
                Tolerance::Whitespace => window
                    .iter()
                    .zip(want)
                    .all(|(f, w)| norm(f) == norm(w))
                    .then_some(Shift::None)?,
                Tolerance::Indentation => indentation(window, want)?,
            };
            Some(Hit {
                start: s,
                shift,
                exact,
            })
        })
        .collect()
}

/// The one indentation offset that makes `want` equal `window` (blank lines aside).
fn indentation(window: &[&str], want: &[String]) -> Option<Shift> {
    let k = want.iter().position(|w| !w.trim().is_empty())?;
    let (f, w) = (window[k].trim_end(), want[k].trim_end());
    let (fl, wl) = (leading(f), leading(w));
    let shift = if fl.len() > wl.len() && fl.ends_with(wl) {
        Shift::Add(fl[..fl.len() - wl.len()].to_owned())
    } else if wl.len() > fl.len() && wl.ends_with(fl) {
        Shift::Remove(wl.len() - fl.len())
    } else {
        return None;
    };
    let fits = window.iter().zip(want).all(|(f, w)| {
        let (f, w) = (f.trim_end(), w.trim_end());
        if w.trim().is_empty() {
            return f.trim().is_empty();
        }
        match &shift {
            Shift::Add(p) => f.strip_prefix(p.as_str()) == Some(w),
            Shift::Remove(n) => w.len() >= *n && leading(w).len() >= *n && w.get(*n..) == Some(f),
            Shift::None => f == w,
        }
    });
    fits.then_some(shift)
}

/// Where a block matched under a tolerance, and what replaces that span.
#[derive(Debug)]
struct Found {
    span: std::ops::Range<usize>,
    replace: String,
    repairs: Vec<&'static str>,
}

/// Why a SEARCH found no single place.
#[derive(Debug)]
enum Miss<'c> {
    NotFound {
        lines: Vec<&'c str>,
        want: Vec<String>,
    },
    Ambiguous {
        lines: Vec<&'c str>,
        starts: Vec<usize>,
        len: usize,
        repairs: Vec<&'static str>,
    },
}

/// Candidates shown for an ambiguous SEARCH, and lines of each.
const CANDIDATES_SHOWN: usize = 5;
const CANDIDATE_LINES: usize = 4;
/// Lines of context shown around the closest match of a SEARCH not found.
const CLOSEST_CONTEXT: usize = 2;

impl Miss<'_> {
    fn observation(&self, path: &str, n: usize) -> Observation {
        match self {
            Miss::Ambiguous {
                lines,
                starts,
                len,
                repairs,
            } => {
                let width = number_width(lines.len());
                let at: Vec<String> = starts.iter().map(|s| (s + 1).to_string()).collect();
                let mut output = String::new();
                for &s in starts.iter().take(CANDIDATES_SHOWN) {
                    let end = (s + len).min(s + CANDIDATE_LINES).min(lines.len());
                    let shown = lines[s..end].iter().map(|l| no_newline(l));
                    output.push_str(&numbered(shown, s + 1, width));
                    output.push_str("...\n");
                }
                let how = match repairs.is_empty() {
                    true => String::new(),
                    false => format!(" (after repair: {})", repairs.join(", ")),
                };
                Observation::error(
                    format!(
                        "block {}: SEARCH text matches {} places in {path}{how}, starting at \
                         lines {}; nothing was changed",
                        n + 1,
                        starts.len(),
                        at.join(", ")
                    ),
                    Some(
                        "include more surrounding lines in SEARCH so that it matches only the \
                         place to change",
                    ),
                )
                .with_output(output)
            }
            Miss::NotFound { lines, want } => {
                let hint = format!(
                    "SEARCH must repeat lines of {path} exactly as they are now, without READ's \
                     line numbers: copy them from the closest lines shown, or READ {path} first"
                );
                let obs = Observation::error(
                    format!("block {}: SEARCH text not found in {path}", n + 1),
                    Some(&hint),
                );
                let Some((s, len)) = closest(lines, want) else {
                    return Observation::error(
                        format!(
                            "block {}: SEARCH text not found in {path}, and no lines of it look \
                             alike",
                            n + 1
                        ),
                        Some(&format!(
                            "READ {path} and copy the lines to change exactly, without the \
                             line numbers"
                        )),
                    );
                };
                let from = s.saturating_sub(CLOSEST_CONTEXT);
                let to = (s + len + CLOSEST_CONTEXT).min(lines.len());
                let shown = numbered(
                    lines[from..to].iter().map(|l| no_newline(l)),
                    from + 1,
                    number_width(lines.len()),
                );
                Observation {
                    summary: format!(
                        "block {}: SEARCH text not found in {path}; the closest lines are {}-{}, \
                         shown with {CLOSEST_CONTEXT} lines around them",
                        n + 1,
                        s + 1,
                        s + len
                    ),
                    output: shown,
                    ..obs
                }
            }
        }
    }
}

/// Matches block `b` against `content` line by line: for each [`Tolerance`], least first,
/// each [`Variant`] in order; the first to find any place decides, and must find one.
fn tolerant<'c>(content: &'c str, b: &Block) -> Result<Found, Miss<'c>> {
    let lines = split_lines(content);
    let variants = variants(b);
    for tolerance in Tolerance::ALL {
        for v in &variants {
            let found = hits(&lines, &v.search, tolerance);
            let hit = match found.as_slice() {
                [] => continue,
                [hit] => hit,
                many => {
                    return Err(Miss::Ambiguous {
                        starts: many.iter().map(|h| h.start).collect(),
                        len: v.search.len(),
                        repairs: with_tolerance(&v.repairs, tolerance, false),
                        lines,
                    });
                }
            };
            let window = &lines[hit.start..hit.start + v.search.len()];
            let offset = |i: usize| lines[..i].iter().map(|l| l.len()).sum::<usize>();
            let span = offset(hit.start)..offset(hit.start + v.search.len());
            // The file's line ends are kept: CRLF lines get CRLF replacements.
            let eol = if window.iter().all(|l| l.ends_with("\r\n")) {
                "\r\n"
            } else {
                "\n"
            };
            let last_has_eol = window.last().is_some_and(|l| l.ends_with('\n'));
            let mut replace: Vec<String> =
                v.replace.iter().map(|l| shifted(l, &hit.shift)).collect();
            if !replace.is_empty() && last_has_eol {
                replace.push(String::new());
            }
            return Ok(Found {
                span,
                replace: replace.join(eol),
                repairs: with_tolerance(&v.repairs, tolerance, hit.exact),
            });
        }
    }
    let want = variants
        .last()
        .map(|v| v.search.clone())
        .unwrap_or_default();
    Err(Miss::NotFound { lines, want })
}

/// A variant's repairs plus the one its tolerance names (none when the lines were equal).
fn with_tolerance(
    repairs: &[&'static str],
    tolerance: Tolerance,
    exact: bool,
) -> Vec<&'static str> {
    let mut out = repairs.to_vec();
    let name = match tolerance {
        _ if exact => None,
        Tolerance::TrailingWhitespace => Some("search_trailing_whitespace"),
        Tolerance::Indentation => Some("search_indentation"),
        Tolerance::Whitespace => Some("search_whitespace"),
    };
    out.extend(name);
    out
}

fn shifted(line: &str, shift: &Shift) -> String {
    if line.trim().is_empty() {
        return line.to_owned();
    }
    match shift {
        Shift::None => line.to_owned(),
        Shift::Add(p) => format!("{p}{line}"),
        Shift::Remove(n) => {
            let k = leading(line).len().min(*n);
            line.get(k..).unwrap_or(line.trim_start()).to_owned()
        }
    }
}

/// The run of `want.len()` lines of the file most like `want` (by the mean similarity of
/// their trimmed lines, [`similarity`]), and its length; `None` when nothing is at least
/// half alike.
fn closest(lines: &[&str], want: &[String]) -> Option<(usize, usize)> {
    let len = want.len().min(lines.len());
    if len == 0 {
        return None;
    }
    let file: Vec<Vec<(char, char)>> = lines.iter().map(|l| bigrams(l.trim())).collect();
    let want: Vec<Vec<(char, char)>> = want.iter().map(|l| bigrams(l.trim())).collect();
    let mut best: Option<(f64, usize)> = None;
    for s in 0..=lines.len() - len {
        let score: f64 = (0..len).map(|k| similarity(&file[s + k], &want[k])).sum();
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, s));
        }
    }
    let (score, s) = best?;
    (score / len as f64 >= 0.5).then_some((s, len))
}

/// A line's character pairs, sorted (a line of one character is its own pair).
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.chars().collect();
    let mut out: Vec<(char, char)> = match chars.as_slice() {
        [] => Vec::new(),
        [c] => vec![(*c, *c)],
        _ => chars.windows(2).map(|w| (w[0], w[1])).collect(),
    };
    out.sort_unstable();
    out
}

/// The Dice coefficient of two lines' character pairs: 1 for equal lines, 0 for lines with
/// no pair in common (two empty lines are equal).
fn similarity(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// Directory names the tree fingerprint skips besides `.git` and `.bellows`: caches a test
/// run writes, which are no change to the task.
const CACHE_DIRS: &[&str] = &[
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    "node_modules",
];

/// Files at most this large are hashed by the tree fingerprint; larger ones count by size
/// and modification time.
const FINGERPRINT_HASH_LIMIT: u64 = 1 << 20;

/// A digest of the repository's files and directories: each path with its kind, size and
/// sha256 (size and modification time for a file over 1 MiB; a link's target; a directory's
/// path alone, so an empty directory made is a change). `.git/`, `.bellows/`, caches
/// a test run writes (`__pycache__/`, `*.pyc`, `.pytest_cache/`, …) and a Rust `target/`
/// next to a `Cargo.toml` are skipped. Two trees with the same files have the same
/// fingerprint, so a change made and undone is no change.
pub fn tree_fingerprint(ws: &Workspace) -> String {
    let mut entries: Vec<String> = Vec::new();
    let mut stack = vec![ws.root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let cargo = dir.join("Cargo.toml").is_file();
        for e in read.flatten() {
            let name = e.file_name();
            if crate::workspace::is_private(&name) {
                continue;
            }
            let name_s = name.to_string_lossy();
            let p = e.path();
            let rel = p
                .strip_prefix(ws.root())
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                let cache = CACHE_DIRS.contains(&name_s.as_ref()) || (cargo && name_s == "target");
                if !cache {
                    // A directory counts too: MKDIR of an empty one is a change.
                    entries.push(format!("{rel}\0dir"));
                    stack.push(p);
                }
                continue;
            }
            if name_s.ends_with(".pyc") || name_s.ends_with(".pyo") {
                continue;
            }
            let line = if ft.is_symlink() {
                let to = std::fs::read_link(&p).map(|t| t.to_string_lossy().into_owned());
                format!("{rel}\0link\0{}", to.unwrap_or_default())
            } else {
                let meta = e.metadata().ok();
                let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
                let content = if size <= FINGERPRINT_HASH_LIMIT {
                    std::fs::read(&p).map_or_else(|_| "unreadable".to_owned(), |b| sha256(&b))
                } else {
                    let modified = meta
                        .and_then(|m| m.modified().ok())
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    format!("modified {modified}")
                };
                format!("{rel}\0file\0{size}\0{content}")
            };
            entries.push(line);
        }
    }
    entries.sort();
    sha256(entries.join("\n").as_bytes())
}

/// Why a commit did not happen as planned, and what it left on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFailure {
    /// What the model is told: what failed, and what the rollback did.
    pub observation: Observation,
    /// The paths the commit changed or tried to before it failed, in order (a directory
    /// with a trailing `/`); empty when it was refused before any step.
    pub touched: Vec<String>,
    /// Those the rollback could not bring back to what they were before the commit.
    pub unrestored: Vec<String>,
}

/// One step [`commit`] took, as its rollback undoes it.
enum Done<'c> {
    Dir(String),
    File(&'c FileChange),
}

/// Re-checks every file against the hash its preview read, then makes the missing
/// directories and writes (temporary file + rename) or removes each file, in order. Nothing is
/// written unless every file still matches. All or nothing: when a step fails, the steps
/// before it are rolled back (pre-images restored with their mode bits, files it created
/// removed, directories it made removed), and the failure says what is on disk.
pub fn commit(
    ws: &Workspace,
    changes: &[FileChange],
    dirs: &[String],
) -> Result<(), Box<CommitFailure>> {
    let refused = |observation: Observation| {
        Box::new(CommitFailure {
            observation,
            touched: Vec::new(),
            unrestored: Vec::new(),
        })
    };
    for c in changes {
        let now = ws.read(&c.path).map_err(|e| refused(e.into()))?;
        if now.as_deref().map(sha256) != c.pre_sha() {
            return Err(refused(Observation::error(
                format!("{} changed since the preview; nothing was written", c.path),
                Some("READ the file again and redo the change against its current text"),
            )));
        }
    }
    let mut done: Vec<Done<'_>> = Vec::new();
    let mut failed = None;
    for d in new_dirs(ws, changes, dirs) {
        let made = ws.resolve(&d).and_then(|p| match std::fs::create_dir(&p) {
            // Made by someone else since the preview: not ours to remove again.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => Ok(false),
            Err(source) => Err(WorkspaceError::Io {
                path: d.clone(),
                source,
            }),
            Ok(()) => Ok(true),
        });
        match made {
            Ok(true) => done.push(Done::Dir(d)),
            Ok(false) => {}
            // A directory that could not be made was not made: nothing to roll back (a
            // file in its place is someone's, and stays).
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if failed.is_none() {
        for c in changes {
            // Counted as touched before it is tried: a failed step may have half happened
            // (written, but its mode not set).
            done.push(Done::File(c));
            let step = match &c.post {
                Some(bytes) => ws
                    .write_atomic(&c.path, bytes)
                    .and_then(|()| match c.post_mode {
                        Some(mode) => ws.set_mode(&c.path, mode),
                        None => Ok(()),
                    }),
                None => ws.remove(&c.path),
            };
            if let Err(e) = step {
                failed = Some(e);
                break;
            }
        }
    }
    let Some(error) = failed else {
        return Ok(());
    };
    let touched: Vec<String> = done
        .iter()
        .map(|d| match d {
            Done::Dir(d) => format!("{d}/"),
            Done::File(c) => c.path.clone(),
        })
        .collect();
    let unrestored = roll_back(ws, &done);
    let summary = match unrestored.is_empty() {
        true => format!("{error}; nothing was changed (the commit was rolled back)"),
        false => format!(
            "{error}; rolling back failed too, so these are not as they were: {}",
            unrestored.join(", ")
        ),
    };
    let hint = match unrestored.is_empty() {
        true => "try another path, or another way",
        false => "the user can restore them with `bellows agent undo --force`",
    };
    Err(Box::new(CommitFailure {
        observation: Observation::error(summary, Some(hint)),
        touched,
        unrestored,
    }))
}

/// Undoes `done` (the steps a failed commit took, the failed one last), newest first: each
/// file back to its pre-image and mode, or removed when it did not exist; each directory
/// made removed. Returns the paths it could not restore.
fn roll_back(ws: &Workspace, done: &[Done<'_>]) -> Vec<String> {
    let mut unrestored = Vec::new();
    for step in done.iter().rev() {
        match step {
            Done::File(c) => {
                if restore(ws, c).is_err() {
                    unrestored.push(c.path.clone());
                }
            }
            Done::Dir(d) => {
                let gone = ws
                    .resolve(d)
                    .is_ok_and(|p| !p.exists() || std::fs::remove_dir(&p).is_ok());
                if !gone {
                    unrestored.push(format!("{d}/"));
                }
            }
        }
    }
    unrestored
}

/// Refuses a file change whose path names a directory (`docs/`, or `docs` where a directory
/// `docs` exists) before anything is written: writing it could only fail halfway.
fn not_a_directory(ws: &Workspace, path: &str) -> Result<(), Observation> {
    let dir = path.ends_with('/') || ws.resolve(path).is_ok_and(|p| p.is_dir());
    if !dir {
        return Ok(());
    }
    let name = path.trim_end_matches('/');
    Err(Observation::error(
        format!("{path} is a directory, not a file; nothing was written"),
        Some(&format!(
            "write the path of a file, with its name: for a file in {name}, {name}/ and then \
             the file's name (e.g. {name}/notes.md)"
        )),
    ))
}

/// Puts one file back as it was before `c`: its pre-image with its mode bits, or absent.
fn restore(ws: &Workspace, c: &FileChange) -> Result<(), WorkspaceError> {
    let now = ws.read(&c.path)?;
    match &c.pre {
        Some(pre) => {
            if now.as_ref() != Some(pre) {
                ws.write_atomic(&c.path, pre)?;
            }
            match c.pre_mode {
                Some(mode) if ws.mode(&c.path) != Some(mode) => ws.set_mode(&c.path, mode),
                _ => Ok(()),
            }
        }
        None if now.is_some() => ws.remove(&c.path),
        None => Ok(()),
    }
}

/// The directories that do not exist yet and that committing `changes` and `dirs` creates,
/// each parent before its children.
pub(crate) fn new_dirs(ws: &Workspace, changes: &[FileChange], dirs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let wanted = dirs.iter().map(String::as_str).chain(
        changes
            .iter()
            .filter(|c| c.post.is_some())
            .filter_map(|c| c.path.rsplit_once('/').map(|(parent, _)| parent)),
    );
    for dir in wanted {
        let mut prefix = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let exists = ws.resolve(&prefix).is_ok_and(|p| p.exists());
            if !exists && !out.contains(&prefix) {
                out.push(prefix.clone());
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn block(s: &str, r: &str) -> Block {
        Block {
            search: s.to_owned(),
            replace: r.to_owned(),
        }
    }

    #[test]
    fn search_must_match_once_and_whitespace_is_repaired_by_name() {
        let pre = "fn a() {\n    1\n}\nfn b() {\n    1\n}\n";
        let twice = apply_blocks("x", Some(pre), &[block("    1\n", "    2\n")]);
        assert!(twice.unwrap_err().summary.contains("matches 2 places"));
        let (post, repairs) = apply_blocks(
            "x",
            Some(pre),
            &[block("fn  b() {\n  1\n", "fn b() {\n    3\n")],
        )
        .unwrap();
        assert_eq!(post, "fn a() {\n    1\n}\nfn b() {\n    3\n}\n");
        assert_eq!(repairs, vec!["search_whitespace"]);
        let none = apply_blocks("x", Some(pre), &[block("fn c()\n", "")]);
        assert!(none.unwrap_err().summary.contains("not found"));
    }

    #[test]
    fn a_rollback_that_cannot_restore_says_what_it_left() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain"), "p\n").unwrap();
        std::fs::create_dir(dir.path().join("full")).unwrap();
        std::fs::write(dir.path().join("full/other"), "o\n").unwrap();
        std::fs::write(dir.path().join("new.txt"), "n\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        // A pre-image under a regular file cannot be written back (ENOTDIR, for root too);
        // a directory that is not empty cannot be removed; a created file can be.
        let under_file = FileChange {
            path: "plain/x.txt".to_owned(),
            pre: Some(b"x\n".to_vec()),
            post: None,
            pre_mode: Some(0o644),
            post_mode: None,
        };
        let created = FileChange {
            path: "new.txt".to_owned(),
            pre: None,
            post: Some(b"n\n".to_vec()),
            pre_mode: None,
            post_mode: None,
        };
        let done = [
            Done::Dir("full".to_owned()),
            Done::File(&under_file),
            Done::File(&created),
        ];
        assert_eq!(roll_back(&ws, &done), ["plain/x.txt", "full/"]);
        assert!(!dir.path().join("new.txt").exists());
        assert!(dir.path().join("full/other").exists());
    }

    /// Applies one block to `pre`: the new text and the repairs, or the refusal.
    fn apply(
        pre: &str,
        search: &str,
        replace: &str,
    ) -> Result<(String, Vec<&'static str>), Observation> {
        apply_blocks("f.py", Some(pre), &[block(search, replace)])
    }

    #[test]
    fn numbered_lines_keep_their_text_and_line_up() {
        assert_eq!(
            numbered(["a  ", "", "\tb\r"], 9, number_width(10)),
            "  9| a  \n 10|\n 11| \tb\n"
        );
        assert_eq!(number_width(7), 3);
        assert_eq!(number_width(12_345), 5);
    }

    #[test]
    fn trailing_whitespace_and_crlf_are_repaired_and_line_ends_kept() {
        let (post, repairs) = apply("x = 1\r\ny = 2\r\n", "y = 2\n", "y = 3\n").unwrap();
        assert_eq!(post, "x = 1\r\ny = 3\r\n");
        assert_eq!(repairs, ["search_trailing_whitespace"]);
        let (post, repairs) = apply("a = 1   \nb = 2\n", "a = 1\nb = 2\n", "a = 0\n").unwrap();
        assert_eq!(
            (post.as_str(), repairs),
            ("a = 0\n", vec!["search_trailing_whitespace"])
        );
        // Two places alike up to trailing whitespace: refused, both shown.
        let err = apply("a \nb\na\t\nb\n", "a\nb\n", "c\n").unwrap_err();
        assert!(
            err.summary.contains("matches 2 places") && err.summary.contains("lines 1, 3"),
            "{}",
            err.summary
        );
        assert!(
            err.output.contains("  1| a") && err.output.contains("  3| a"),
            "{}",
            err.output
        );
    }

    #[test]
    fn read_line_numbers_are_stripped_only_when_every_line_has_one_in_sequence() {
        let pre = "a\nb\nc\n";
        let (post, repairs) = apply(pre, "  2| b\n  3| c\n", "  2| B\n  3| c\n").unwrap();
        assert_eq!(
            (post.as_str(), repairs),
            ("a\nB\nc\n", vec!["search_line_numbers"])
        );
        // A line the model added to REPLACE without a number is kept as written.
        let (post, _) = apply(pre, "2| b\n", "2| b\nb2\n").unwrap();
        assert_eq!(post, "a\nb\nb2\nc\n");
        // Out of sequence, or not on every line: not READ's numbers, so nothing is stripped.
        let err = apply(pre, "  2| b\n  5| c\n", "x\n").unwrap_err();
        assert!(err.summary.contains("not found"), "{}", err.summary);
        let err = apply(pre, "  2| b\nc\n", "x\n").unwrap_err();
        assert!(err.summary.contains("not found"), "{}", err.summary);
        // Stripped, the text matches twice: the number is not taken as a guess of which.
        let err = apply("x\nx\n", "  1| x\n", "y\n").unwrap_err();
        assert!(
            err.summary.contains("matches 2 places") && err.summary.contains("search_line_numbers"),
            "{}",
            err.summary
        );
    }

    #[test]
    fn blank_lines_around_search_are_dropped_and_replace_keeps_its_own() {
        let (post, repairs) = apply("a\nb\nc\n", "\nb\n\n", "\nB\n\n").unwrap();
        assert_eq!(
            (post.as_str(), repairs),
            ("a\nB\nc\n", vec!["search_blank_lines"])
        );
        let err = apply("b\nx\nb\n", "\nb\n", "c\n").unwrap_err();
        assert!(
            err.summary.contains("matches 2 places") && err.summary.contains("lines 1, 3"),
            "{}",
            err.summary
        );
    }

    #[test]
    fn uniformly_wrong_indentation_is_repaired_and_replace_shifted_alike() {
        let pre = "def f():\n    if x:\n        return 1\n";
        let (post, repairs) = apply(pre, "if x:\n    return 1\n", "if x:\n    return 2\n").unwrap();
        assert_eq!(post, "def f():\n    if x:\n        return 2\n");
        assert_eq!(repairs, ["search_indentation"]);
        // Too much indentation is taken off REPLACE as it is off SEARCH.
        let (post, repairs) = apply(
            pre,
            "        if x:\n            return 1\n",
            "        if y:\n            return 1\n",
        )
        .unwrap();
        assert_eq!(post, "def f():\n    if y:\n        return 1\n");
        assert_eq!(repairs, ["search_indentation"]);
        // Indentation that is not uniformly off is no indentation repair: the whitespace one
        // matches, and takes REPLACE as written.
        let (post, repairs) = apply(pre, "if x:\n  return 1\n", "z\n").unwrap();
        assert_eq!(
            (post.as_str(), repairs),
            ("def f():\nz\n", vec!["search_whitespace"])
        );
        // The same lines at two indentations: refused, both candidates shown.
        let err = apply("    a\n    b\n        a\n        b\n", "a\nb\n", "c\n").unwrap_err();
        assert!(
            err.summary.contains("matches 2 places") && err.summary.contains("lines 1, 3"),
            "{}",
            err.summary
        );
        assert!(
            err.summary.contains("search_indentation"),
            "{}",
            err.summary
        );
    }

    #[test]
    fn a_search_not_found_shows_the_closest_lines_numbered() {
        let pre: String = (1..=12)
            .map(|i| format!("value_{i} = compute({i})\n"))
            .collect();
        let err = apply(&pre, "value_7 = compute(8)\nvalue_8 = compute(8)\n", "x\n").unwrap_err();
        assert!(
            err.summary.contains("closest lines are 7-8"),
            "{}",
            err.summary
        );
        assert!(
            err.output
                .contains("  7| value_7 = compute(7)\n  8| value_8 = compute(8)\n"),
            "{}",
            err.output
        );
        assert!(
            err.output.contains("  5| ")
                && err.output.contains(" 10| ")
                && !err.output.contains(" 11| ")
        );
        assert!(
            err.hint
                .as_deref()
                .unwrap()
                .contains("without READ's line numbers")
        );
        // Nothing alike: said so, with what to do.
        let err = apply(&pre, "zzz qqq\n", "x\n").unwrap_err();
        assert!(err.summary.contains("no lines of it look alike") && err.hint.is_some());
        // An exact SEARCH in several places names each.
        let err = apply("a\nb\na\n", "a\n", "c\n").unwrap_err();
        assert!(
            err.summary.contains("matches 2 places") && err.summary.contains("lines 1, 3"),
            "{}",
            err.summary
        );
    }

    #[test]
    fn empty_search_appends_or_creates() {
        let (post, _) = apply_blocks("x", Some("a"), &[block("", "b\n")]).unwrap();
        assert_eq!(post, "a\nb\n");
        let (post, _) = apply_blocks("x", None, &[block("", "new\n")]).unwrap();
        assert_eq!(post, "new\n");
    }
}
