//! The strict grammar of the text protocol: a reply that must act, written so that every
//! action the grammar admits is one the text decoder decodes.
//!
//! The plain protocol grammar lets a verb take any word, but the decoder reads some bare words
//! as prose, never as arguments: English function words (`READ the file`), the protocol's
//! placeholders (`READ path`, the help text echoed back), a path ending in a full stop, a
//! `RUN` line ending like a sentence. Under a strict grammar such a line could only be a
//! wasted reply. The rules here exclude those words from bare arguments (quoted, any word is
//! an argument), so a strict reply always converts.
//!
//! A bare word made only of letters is checked against the excluded words with a trie whose
//! every node admits any letter but the ones continuing an excluded word; a word holding any
//! other character cannot be a function word or a placeholder and only has to respect the
//! first and last character rules of its kind.

use std::fmt::Write as _;

use crate::words::{FUNCTION_WORDS, PLACEHOLDERS, STOPWORDS};

/// The longest run of characters a bare word part may take: a word is at most a few times
/// this. Without a bound a small model under the grammar can spin one path out until its token
/// budget is gone (`1.1.1.1…`), and the action never completes.
const MAX_RUN: usize = 48;

/// Lines a strict edit or create block may not hold: the system prompt's example bodies (a
/// block of them is the help text echoed, not an edit).
const EXAMPLE_LINES: &[&str] = &["exact lines copied from the file", "the new lines"];

/// A set of characters as sorted, disjoint inclusive ranges.
#[derive(Debug, Clone, PartialEq)]
struct Class(Vec<(u32, u32)>);

impl Class {
    fn new(ranges: &[(char, char)]) -> Class {
        let mut c = Class(Vec::new());
        for &(a, b) in ranges {
            c = c.union(&Class(vec![(a as u32, b as u32)]));
        }
        c
    }

    fn chars(cs: &str) -> Class {
        Class::new(&cs.chars().map(|c| (c, c)).collect::<Vec<_>>())
    }

    fn union(&self, other: &Class) -> Class {
        let mut all: Vec<(u32, u32)> = self.0.iter().chain(&other.0).copied().collect();
        all.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::new();
        for (a, b) in all {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Class(out)
    }

    fn minus(&self, other: &Class) -> Class {
        let mut out = Vec::new();
        for &(a, b) in &self.0 {
            let mut start = a;
            for &(x, y) in &other.0 {
                if y < start || x > b {
                    continue;
                }
                if x > start {
                    out.push((start, x - 1));
                }
                start = y.saturating_add(1);
                if start > b {
                    break;
                }
            }
            if start <= b && start >= a {
                out.push((start, b));
            }
        }
        Class(out)
    }

    fn intersect(&self, other: &Class) -> Class {
        self.minus(&self.minus(other))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn gbnf(&self) -> String {
        fn one(c: u32) -> String {
            match char::from_u32(c) {
                Some(ch) if ch.is_ascii_alphanumeric() => ch.to_string(),
                _ if c <= 0xFF => format!("\\x{c:02X}"),
                _ if c <= 0xFFFF => format!("\\u{c:04X}"),
                _ => format!("\\U{c:08X}"),
            }
        }
        let mut s = String::from("[");
        for &(a, b) in &self.0 {
            s.push_str(&one(a));
            if b != a {
                s.push('-');
                s.push_str(&one(b));
            }
        }
        s.push(']');
        s
    }
}

/// Letters: the only characters of the excluded words that matter (see the module docs).
fn letters() -> Class {
    Class::new(&[('a', 'z'), ('A', 'Z')])
}

/// One kind of bare word: its alphabet, first characters, and characters it may not end in.
struct Kind {
    name: &'static str,
    alpha: Class,
    first: Class,
    no_end: Class,
    /// The letters-only trie rule that excludes this kind's words.
    trie: &'static str,
}

/// Appends the trie rules excluding `words` (letters only, case-insensitive) under `name`: a
/// non-empty run of letters that is none of them.
fn trie_rules(name: &str, words: &[&str], out: &mut String) {
    let mut words: Vec<String> = words
        .iter()
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic()))
        .map(|w| w.to_ascii_lowercase())
        .collect();
    words.sort();
    words.dedup();
    // Prefixes of the excluded words are the trie's nodes; each gets one rule.
    let mut prefixes: Vec<String> = vec![String::new()];
    for w in &words {
        for i in 1..=w.len() {
            let p = w[..i].to_owned();
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
    }
    let rule = |p: &str| {
        if p.is_empty() {
            name.to_owned()
        } else {
            format!("{name}-{p}")
        }
    };
    let any = letters().gbnf();
    for p in &prefixes {
        let children: Vec<char> = {
            let mut c: Vec<char> = prefixes
                .iter()
                .filter(|q| q.len() == p.len() + 1 && q.starts_with(p.as_str()))
                .filter_map(|q| q.chars().last())
                .collect();
            c.sort_unstable();
            c
        };
        let taken = Class::new(
            &children
                .iter()
                .flat_map(|c| [(*c, *c), (c.to_ascii_uppercase(), c.to_ascii_uppercase())])
                .collect::<Vec<_>>(),
        );
        let mut alts: Vec<String> = Vec::new();
        let free = letters().minus(&taken);
        if !free.is_empty() {
            alts.push(format!("{} {any}{{0,{MAX_RUN}}}", free.gbnf()));
        }
        for c in &children {
            let mut next = p.clone();
            next.push(*c);
            alts.push(format!("[{}{}] {}", c, c.to_ascii_uppercase(), rule(&next)));
        }
        let body = alts.join(" | ");
        // The word may end here unless this prefix is itself excluded (the root is not a word).
        let ends = !p.is_empty() && !words.contains(p);
        if ends {
            let _ = writeln!(out, "{} ::= ({body})?", rule(p));
        } else {
            let _ = writeln!(out, "{} ::= {body}", rule(p));
        }
    }
}

/// The longest line a strict block may hold, in characters.
const MAX_LINE: usize = 240;

/// Appends rules under `name` for a line's text (no newline) that does not start with any of
/// `lines`: a trie over them whose last characters are never admitted, any other character
/// leaving it for the bounded rest of the line. (Excluding only the exact line would leave a
/// model that began it nothing to do but spin it on.)
fn line_trie_rules(name: &str, lines: &[&str], out: &mut String) {
    let mut prefixes: Vec<String> = vec![String::new()];
    for l in lines {
        for (i, c) in l.char_indices() {
            let p = l[..i + c.len_utf8()].to_owned();
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
    }
    let rule = |i: usize| {
        if i == 0 {
            name.to_owned()
        } else {
            format!("{name}-{i}")
        }
    };
    let rest = format!("{name}-rest");
    let _ = writeln!(out, "{rest} ::= [^\\n\\r]{{0,{MAX_LINE}}}");
    for (i, p) in prefixes.iter().enumerate() {
        if lines.contains(&p.as_str()) {
            continue;
        }
        let mut alts = Vec::new();
        let children: Vec<(char, usize)> = prefixes
            .iter()
            .enumerate()
            .filter(|(_, q)| q.starts_with(p.as_str()) && q[p.len()..].chars().count() == 1)
            .filter_map(|(j, q)| q[p.len()..].chars().next().map(|c| (c, j)))
            .collect();
        let taken = Class::chars(&children.iter().map(|(c, _)| *c).collect::<String>())
            .union(&Class::chars("\n\r"));
        let free = Class::new(&[('\u{1}', '\u{10FFFF}')]).minus(&taken);
        alts.push(format!("{} {rest}", free.gbnf()));
        for (c, j) in &children {
            // The last character of an excluded line is never admitted.
            if !lines.contains(&prefixes[*j].as_str()) {
                alts.push(format!(
                    "{} {}",
                    Class::chars(&c.to_string()).gbnf(),
                    rule(*j)
                ));
            }
        }
        let _ = writeln!(out, "{} ::= ({})?", rule(i), alts.join(" | "));
    }
}

/// Appends the rules of one kind of bare word: `NAME ::= letters-only-word | mixed-word`.
fn kind_rules(k: &Kind, out: &mut String) {
    let n = k.name;
    let l = letters();
    let nonletters = k.alpha.minus(&l);
    let ok_end = k.alpha.minus(&k.no_end);
    let a = k.alpha.gbnf();
    let e = ok_end.gbnf();
    let _ = writeln!(out, "{n} ::= {} | {n}-mixed", k.trie);
    // A word holding a non-letter: it starts with one, or with letters followed by one.
    let _ = writeln!(out, "{n}-ok ::= ({a}{{0,{MAX_RUN}}} {e})?");
    let _ = writeln!(out, "{n}-need ::= {a}{{0,{MAX_RUN}}} {e}");
    let mut alts = Vec::new();
    let first_nl = nonletters.intersect(&k.first);
    let split = |c: &Class, alts: &mut Vec<String>, prefix: &str| {
        let fine = c.intersect(&ok_end);
        let bad = c.minus(&ok_end);
        if !fine.is_empty() {
            alts.push(format!("{prefix}{} {n}-ok", fine.gbnf()));
        }
        if !bad.is_empty() {
            alts.push(format!("{prefix}{} {n}-need", bad.gbnf()));
        }
    };
    split(&first_nl, &mut alts, "");
    let mut after_letters = Vec::new();
    split(&nonletters, &mut after_letters, "");
    if !l.intersect(&k.first).is_empty() {
        alts.push(format!(
            "{}{{1,{MAX_RUN}}} ({})",
            l.intersect(&k.first).gbnf(),
            after_letters.join(" | ")
        ));
    }
    let _ = writeln!(out, "{n}-mixed ::= {}", alts.join(" | "));
}

/// A rest of line that does not start with the word `w` (the help text's `DONE summary`).
fn not_starting_with(name: &str, w: &str, out: &mut String) {
    let mut alts = Vec::new();
    for (i, c) in w.char_indices() {
        let exclude = if i == 0 {
            format!("{c} \\t\\n")
        } else {
            format!("{c}\\n")
        };
        alts.push(format!("\"{}\" [^{exclude}] [^\\n]*", &w[..i]));
        if i > 0 {
            alts.push(format!("\"{}\"", &w[..i]));
        }
    }
    alts.push(format!("\"{w}\" [^ \\t\\n] [^\\n]*"));
    let _ = writeln!(out, "{name} ::= {}", alts.join(" | "));
}

/// The strict rules: `acting` (lead lines, then an action whose arguments decode) and the
/// per-tool `NAME-strict` rules, combined in `strict-action`. They reuse the protocol
/// grammar's `prose`, `action`, `block`, `create-block` and `range` rules.
pub(crate) fn strict_rules(tools: &[&str]) -> String {
    let mut g = String::new();
    g.push_str(
        "\n# Strict: at most two short lead lines (not a marker, fence or call opener), then an\n\
         # action the decoder decodes: bare arguments are never function words, the protocol's\n\
         # placeholders, or end like a sentence. Quoted, any argument goes.\n",
    );
    // One lead line, as the system prompt asks ("at most one short sentence").
    g.push_str("acting ::= lead? strict-action (prose | action)*\n");
    g.push_str(
        "lead ::= \"\\n\" | [^A-Z<=>`{\\[\\n] [^\\n]{0,119} \"\\n\" | [A-Z] ([^A-Z\\n] [^\\n]{0,118})? \"\\n\"\n",
    );
    let alts: Vec<String> = tools.iter().map(|t| format!("{t}-strict")).collect();
    let _ = writeln!(g, "strict-action ::= {}", alts.join(" | "));
    for t in tools {
        let body = match *t {
            "read" => "\"READ \" s-path s-range? \"\\n\"",
            "list" => "\"LIST\" (\" \" s-path)? \"\\n\"",
            "glob" => "\"GLOB \" s-glob \"\\n\"",
            "grep" => "\"GREP \" s-arg (\" -- \" s-path)? \"\\n\"",
            "run" => "\"RUN \" s-prog (\" \" s-arg){0,12} \"\\n\"",
            "delete" => "\"DELETE \" s-path \"\\n\"",
            "mkdir" => "\"MKDIR \" s-path \"\\n\"",
            "move" => "\"MOVE \" s-path \" -> \" s-target \"\\n\"",
            "done" => "\"DONE\" (\" \" s-done)? \"\\n\"",
            "edit" => "\"EDIT \" s-path \"\\n\" s-block+",
            "create" => "\"CREATE \" s-path \"\\n\" s-create-block",
            _ => continue,
        };
        let _ = writeln!(g, "{t}-strict ::= {body}");
    }
    // Quoted words: single quotes hold anything but a quote; double quotes take escapes.
    g.push_str("s-quoted ::= \"'\" [^'\\n\\r]+ \"'\" | \"\\\"\" ([^\"\\\\\\n\\r] | \"\\\\\" [^\\n\\r])+ \"\\\"\"\n");
    for (rule, bare) in [
        ("s-path", "\".\" | \"..\" | s-bare-path"),
        ("s-target", "\".\" | \"..\" | s-bare-target"),
        ("s-glob", "s-bare-glob"),
        ("s-prog", "s-bare-prog"),
        ("s-arg", "s-bare-arg"),
    ] {
        let _ = writeln!(g, "{rule} ::= {bare} | s-quoted");
    }
    not_starting_with("s-done", "summary", &mut g);
    // Line numbers of at most six digits (a model can spin digits out, too).
    g.push_str("s-range ::= \":\" [1-9] [0-9]{0,5} \"-\" [1-9] [0-9]{0,5}\n");
    g.push_str(
        "s-block ::= \"<<<<<<< SEARCH\\n\" s-line* \"=======\\n\" s-line* \">>>>>>> REPLACE\\n\"\n\
         s-create-block ::= \"<<<<<<< SEARCH\\n=======\\n\" s-line* \">>>>>>> REPLACE\\n\"\n\
         s-line ::= s-text \"\\n\"\n",
    );
    line_trie_rules("s-text", EXAMPLE_LINES, &mut g);

    let high = ('\u{80}', '\u{10FFFF}');
    let path_alpha =
        Class::new(&[('a', 'z'), ('A', 'Z'), ('0', '9'), high]).union(&Class::chars("._/-~+@"));
    // A bare path starts with a letter, digit, full stop or non-ASCII character: not `-` (an
    // option), `/` or `~` (outside the repository anyway), nor `_`/`+`/`@` alone.
    let path_first =
        Class::new(&[('a', 'z'), ('A', 'Z'), ('0', '9'), high]).union(&Class::chars("."));
    let glob_alpha = path_alpha.union(&Class::chars("*?[]{}!,"));
    let prog_alpha =
        Class::new(&[('a', 'z'), ('A', 'Z'), ('0', '9')]).union(&Class::chars("_./+-"));
    // Any character but blanks, quotes and backslashes (those are quoting).
    // No shell syntax either: without a shell `|`, `;`, `>`, `$(`… would mean something else,
    // and the decoder refuses them.
    let arg_alpha =
        Class::new(&[('\u{1}', '\u{10FFFF}')]).minus(&Class::chars(" \t\n\r'\"\\|&;<>`()$"));
    let kinds = [
        Kind {
            name: "s-bare-path",
            alpha: path_alpha.clone(),
            first: path_first.clone(),
            no_end: Class::chars("."),
            trie: "s-word",
        },
        Kind {
            name: "s-bare-target",
            alpha: path_alpha.clone(),
            first: path_first.clone(),
            no_end: Class::chars("."),
            trie: "s-word-target",
        },
        Kind {
            name: "s-bare-glob",
            alpha: glob_alpha.clone(),
            first: glob_alpha.minus(&Class::chars("-")),
            no_end: Class::chars(".,"),
            trie: "s-word",
        },
        Kind {
            name: "s-bare-prog",
            alpha: prog_alpha.clone(),
            first: prog_alpha.minus(&Class::chars("-")),
            no_end: Class::chars(".:"),
            trie: "s-word",
        },
        Kind {
            name: "s-bare-arg",
            alpha: arg_alpha.clone(),
            // `--` alone is GREP's path separator; an argument may start with `-` otherwise,
            // but not be only dashes.
            first: arg_alpha.clone(),
            no_end: Class::chars(".:!?,-"),
            trie: "s-word",
        },
    ];
    for k in &kinds {
        kind_rules(k, &mut g);
    }
    let excluded: Vec<&str> = STOPWORDS
        .iter()
        .chain(FUNCTION_WORDS)
        .chain(PLACEHOLDERS)
        .copied()
        .collect();
    trie_rules("s-word", &excluded, &mut g);
    // MOVE's help line is `MOVE src -> dst`: its target may not be the placeholder `dst`.
    let mut target = excluded.clone();
    target.push("dst");
    trie_rules("s-word-target", &target, &mut g);
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_subtract_and_print() {
        let az = Class::new(&[('a', 'z')]);
        let c = az.minus(&Class::chars("aez"));
        assert_eq!(
            c.0,
            vec![('b' as u32, 'd' as u32), ('f' as u32, 'y' as u32)]
        );
        assert_eq!(c.gbnf(), "[b-df-y]");
        assert_eq!(Class::chars(".-]").gbnf(), "[\\x2D-\\x2E\\x5D]");
        assert!(az.minus(&az).is_empty());
        assert_eq!(az.intersect(&Class::chars("q1")).gbnf(), "[q]");
    }
}
