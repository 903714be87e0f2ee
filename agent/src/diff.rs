//! A small unified diff (LCS over lines, three lines of context) for previews. Previews are of
//! files a small model edits, so the quadratic table is bounded: past [`MAX_CELLS`] the diff
//! falls back to one hunk replacing the whole file, which is still a correct diff.

use std::fmt::Write;

const MAX_CELLS: usize = 4_000_000;
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep(usize, usize),
    Del(usize),
    Add(usize),
}

/// `--- a/path` / `+++ b/path` and the hunks turning `old` into `new`; empty when equal. A
/// missing file is `/dev/null` on its side.
pub fn unified(path: &str, old: Option<&str>, new: Option<&str>) -> String {
    let (a, b) = (old.unwrap_or(""), new.unwrap_or(""));
    if old.is_some() && a == b && new.is_some() {
        return String::new();
    }
    let al: Vec<&str> = a.split_inclusive('\n').collect();
    let bl: Vec<&str> = b.split_inclusive('\n').collect();
    let ops = script(&al, &bl);
    let mut out = String::new();
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_owned()
    };
    let to = if new.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".to_owned()
    };
    let _ = writeln!(out, "--- {from}\n+++ {to}");
    // Group changes into hunks with CONTEXT lines around them.
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&i| !matches!(ops[i], Op::Keep(..)))
        .collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let (a0, b0) = position(&ops[..start]);
        let a_len = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let b_len = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        let _ = writeln!(
            out,
            "@@ -{},{} +{},{} @@",
            if a_len == 0 { a0 } else { a0 + 1 },
            a_len,
            if b_len == 0 { b0 } else { b0 + 1 },
            b_len
        );
        for op in hunk {
            let (sign, line) = match *op {
                Op::Keep(x, _) => (' ', al[x]),
                Op::Del(x) => ('-', al[x]),
                Op::Add(y) => ('+', bl[y]),
            };
            out.push(sign);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

fn position(ops: &[Op]) -> (usize, usize) {
    ops.iter().fold((0, 0), |(a, b), o| match o {
        Op::Keep(..) => (a + 1, b + 1),
        Op::Del(_) => (a + 1, b),
        Op::Add(_) => (a, b + 1),
    })
}

fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    // Common prefix and suffix first: edits are usually small and local.
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<Op> = (0..pre).map(|i| Op::Keep(i, i)).collect();
    if am.len().saturating_mul(bm.len()) > MAX_CELLS {
        ops.extend((0..am.len()).map(|i| Op::Del(pre + i)));
        ops.extend((0..bm.len()).map(|j| Op::Add(pre + j)));
    } else {
        let (n, m) = (am.len(), bm.len());
        let mut t = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                t[i * (m + 1) + j] = if am[i] == bm[j] {
                    t[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    t[(i + 1) * (m + 1) + j].max(t[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push(Op::Keep(pre + i, pre + j));
                i += 1;
                j += 1;
            } else if i < n && (j == m || t[(i + 1) * (m + 1) + j] >= t[i * (m + 1) + j + 1]) {
                // Deletions first, as diff(1) prints them.
                ops.push(Op::Del(pre + i));
                i += 1;
            } else {
                ops.push(Op::Add(pre + j));
                j += 1;
            }
        }
    }
    let (ea, eb) = (a.len() - suf, b.len() - suf);
    ops.extend((0..suf).map(|k| Op::Keep(ea + k, eb + k)));
    ops
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::unified;

    #[test]
    fn one_changed_line_has_context_and_counts() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = unified("x.txt", Some(old), Some(new));
        assert_eq!(
            d,
            "--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn creation_is_from_dev_null() {
        let d = unified("n.txt", None, Some("hi\n"));
        assert_eq!(d, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+hi\n");
    }
}
