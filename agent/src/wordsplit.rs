//! Where a shell script splits a value at spaces, told in the first message where the task
//! is about spaces. Asked to make linecount.sh work with file names that contain spaces, the
//! 1.5B quoted `"$f"` in the loop's body and left `for f in $@` as it was, in every attempt of
//! session 27 (benches/README.md): the split happens in the line it never looked at. The
//! places are what a shell linter reports (an expansion outside double quotes is split into
//! words and globbed), read here from the script's text, nothing run.
//!
//! An expansion counts where the shell splits it: outside double quotes, also inside a
//! command substitution (`$(cat $f)`, whose inside is quoted anew), and not as the value of an
//! assignment (`file=$1`, which is never split), after `case`, inside `[[ ]]`, nor for the
//! special parameters that hold no spaces (`$#`, `$?`, `$$`, `$!`, `$-`, `$0`) or arithmetic.

use crate::workspace::Workspace;

/// Lines a note lists at most per script.
const MAX_LINES: usize = 8;

/// The first message's note for each shell script `task` names whose lines expand a value
/// unquoted, where the task speaks of spaces; `None` where there is none.
pub fn note(task: &str, ws: &Workspace) -> Option<String> {
    let spaces = task
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| matches!(w.to_lowercase().as_str(), "space" | "spaces"));
    if !spaces {
        return None;
    }
    let mut out = String::new();
    for (path, text) in crate::targets::named_texts(task, ws) {
        if !crate::shellopt::is_shell(&path, &text) {
            continue;
        }
        let found: Vec<(usize, &str, Vec<String>)> = text
            .lines()
            .enumerate()
            .filter_map(|(k, l)| {
                let names = unquoted(l);
                (!names.is_empty()).then(|| (k + 1, l.trim(), names))
            })
            .take(MAX_LINES)
            .collect();
        if found.is_empty() {
            continue;
        }
        let mut lines = String::new();
        let mut all: Vec<String> = Vec::new();
        for (n, line, names) in &found {
            lines.push_str(&format!("  line {n} `{line}`: {}\n", names.join(", ")));
            for name in names {
                if !all.contains(name) {
                    all.push(name.clone());
                }
            }
        }
        let quoted: Vec<String> = all.iter().map(|n| format!("\"{n}\"")).collect();
        out.push_str(&format!(
            "{path} expands these outside double quotes, where the shell splits a value at \
             its spaces into several words:\n{lines}Written inside double quotes ({}) each \
             value stays one word, spaces and all.\n",
            quoted.join(", ")
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// Where the scanner is.
#[derive(Clone, Copy, PartialEq)]
enum Ctx {
    /// Outside quotes (the line, or inside a command substitution).
    Plain,
    /// Inside double quotes.
    Double,
    /// Inside `[[ … ]]`, where nothing is split.
    Test,
}

/// The expansions of `line` the shell splits (`$f`, `${name}`, `$1`, `$@`), as written, each
/// once, in order.
pub fn unquoted(line: &str) -> Vec<String> {
    let b = line.as_bytes();
    let mut out: Vec<String> = Vec::new();
    // Contexts; a command substitution pushes `Plain` and records its depth of parentheses.
    let mut stack: Vec<(Ctx, u32)> = vec![(Ctx::Plain, 0)];
    // Where the current word began, per level (for `name=value` words).
    let mut word_start: Vec<usize> = vec![0];
    let mut i = 0;
    while i < b.len() {
        let (ctx, _) = *stack.last().unwrap_or(&(Ctx::Plain, 0));
        let c = b[i];
        match ctx {
            Ctx::Double => match c {
                b'\\' => i += 1,
                b'"' => {
                    stack.pop();
                }
                b'$' if b.get(i + 1) == Some(&b'(') && b.get(i + 2) != Some(&b'(') => {
                    stack.push((Ctx::Plain, 0));
                    word_start.push(i + 2);
                    i += 1;
                }
                _ => {}
            },
            Ctx::Plain | Ctx::Test => match c {
                b'#' if i == 0 || b[i - 1].is_ascii_whitespace() => break,
                b'\\' => i += 1,
                b'\'' => {
                    i += 1;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                }
                b'"' => stack.push((Ctx::Double, 0)),
                b'[' if ctx == Ctx::Plain && line[i..].starts_with("[[ ") => {
                    stack.push((Ctx::Test, 0));
                    i += 1;
                }
                b']' if ctx == Ctx::Test && line[i..].starts_with("]]") => {
                    stack.pop();
                    i += 1;
                }
                b'(' => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                }
                b')' => {
                    let depth = stack.last().map_or(0, |t| t.1);
                    if depth > 0 {
                        if let Some(top) = stack.last_mut() {
                            top.1 -= 1;
                        }
                    } else if stack.len() > 1 {
                        stack.pop();
                        word_start.pop();
                    }
                }
                c if c.is_ascii_whitespace() || matches!(c, b';' | b'|' | b'&') => {
                    if let Some(w) = word_start.last_mut() {
                        *w = i + 1;
                    }
                }
                b'$' => {
                    if line[i..].starts_with("$((") {
                        // Arithmetic: a number, never split at spaces.
                        let mut depth = 0i32;
                        while i < b.len() {
                            match b[i] {
                                b'(' => depth += 1,
                                b')' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                            i += 1;
                        }
                    } else if b.get(i + 1) == Some(&b'(') {
                        stack.push((Ctx::Plain, 0));
                        word_start.push(i + 2);
                        i += 1;
                    } else if let Some(len) = expansion(&line[i..]) {
                        let start = word_start.last().copied().unwrap_or(0).min(i);
                        let word = &line[start..i];
                        let before = line[..start].trim_end();
                        let assignment = is_assignment(word);
                        let after_case = before.ends_with("case");
                        if ctx == Ctx::Plain && !assignment && !after_case {
                            let name = line[i..i + len].to_owned();
                            if !out.contains(&name) {
                                out.push(name);
                            }
                        }
                        i += len - 1;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    out
}

/// The length of the expansion `s` starts with (`$name`, `${…}`, `$1`, `$@`, `$*`), where it
/// can hold spaces; `None` for the special parameters that cannot, or no expansion.
fn expansion(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('$')?;
    let first = rest.chars().next()?;
    if first == '{' {
        let end = rest.find('}')?;
        let inner = &rest[1..end];
        if inner.starts_with('#') || inner == "0" {
            return None;
        }
        return Some(end + 2);
    }
    if matches!(first, '@' | '*') || first.is_ascii_digit() && first != '0' {
        return Some(2);
    }
    if first.is_ascii_alphabetic() || first == '_' {
        let n = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .count();
        return Some(n + 1);
    }
    None
}

/// `name=…`: a word whose value is never split.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn expansions_the_shell_splits() {
        assert_eq!(unquoted("for f in $@; do"), ["$@"]);
        assert_eq!(unquoted("  n=$(cat $f | wc -l)"), ["$f"]);
        assert_eq!(
            unquoted("cp $src \"$dst\" ${name}.bak"),
            ["$src", "${name}"]
        );
        assert_eq!(unquoted("echo \"$(basename $1)\""), ["$1"]);
        assert_eq!(unquoted("rm $1 $1"), ["$1"]);
    }

    #[test]
    fn expansions_it_does_not() {
        for line in [
            "file=$1",
            "echo \"$n $f\"",
            "echo '$f'",
            "echo \\$f",
            "case $1 in",
            "[[ -f $f ]] && echo ok",
            "echo $# $? $$ $0 ${#f}",
            "i=$((i + $n))",
            "echo $((n + 1))",
            "# for f in $@",
            "n=$(wc -l < \"$f\")",
        ] {
            assert!(unquoted(line).is_empty(), "{line}: {:?}", unquoted(line));
        }
    }

    #[test]
    fn any_line_is_scanned_without_a_panic() {
        // Unclosed quotes and substitutions, escapes before multi-byte letters, stray
        // brackets: every prefix of each.
        for line in [
            "echo \"$(basename $1",
            "x=\\é$f 'ü $g",
            "echo ${unclosed $h é",
            ")) ]] [[ $a é \"$b",
            "$((1 + ( $n )",
            "é\\",
        ] {
            for (i, _) in line.char_indices() {
                let _ = unquoted(&line[..i]);
            }
            let _ = unquoted(line);
        }
        assert_eq!(unquoted("cat é$f"), ["$f"]);
    }

    #[test]
    fn the_note_lists_each_line_for_a_task_about_spaces() {
        let script = "#!/bin/sh\n# Usage: sh linecount.sh FILE...\nfor f in $@; do\n  n=$(cat $f | wc -l)\n  echo \"$n $f\"\ndone\n";
        let (_dir, ws) = crate::testing::repo(&[("linecount.sh", script)]);
        let task = "`sh linecount.sh 'a b.txt'` fails. Make linecount.sh work with file names that contain spaces.";
        let n = note(task, &ws).unwrap();
        assert!(
            n.contains("  line 3 `for f in $@; do`: $@\n  line 4 `n=$(cat $f | wc -l)`: $f\n"),
            "{n}"
        );
        assert!(n.contains("(\"$@\", \"$f\")"), "{n}");
        assert_eq!(n.matches("expands these").count(), 1);
        assert_eq!(note("Make linecount.sh print totals.", &ws), None);
    }
}
