//! A fixed decoding workload, for instruction counts where wall-clock benches are too noisy
//! (a shared machine): 64 KiB of prose, edit-dense text or Hermes calls (builtin registry,
//! `auto`), each decoded whole and in 3–8-byte chunks 20 times; or a trigger (`verb`: `READ `,
//! `pyl`: `[read(`, `path`: a path line) followed by 1 MiB of letters in 4-byte chunks. Run it
//! under cachegrind at two commits and compare the `I refs`:
//!
//! ```text
//! cargo build --release -p codec --example decode_workload
//! valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
//!     target/release/examples/decode_workload prose
//! ```
//!
//! Bare pythonic calls: `bare` is the same prose with one call line, `read(path="a.py")`, after
//! its first line; `mentions` is prose whose every line starts with the tool's name and none is
//! a call (as `benches/codec.rs`'s `bare_call_mentions`). Openers: `bcx` is `read(path=p` (an
//! expression argument), `bcl` and `bcls` `read(path=p)` and a newline (an expression call
//! line, held while blanks follow) before letters and spaces. A second argument sets the size
//! in KiB (64 for replies, 1024 after an opener), to compare the cost at N and 4N.
use codec::{Mode, Registry, TurnDecoder};
use std::sync::Arc;
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
const WORDS: &[&str] = &[
    "the", "function", "returns", "a", "value", "when", "list", "is", "empty", "so", "we",
    "should", "check", "length", "first", "and", "then", "divide", "by", "number", "of", "items",
    "this", "fixes", "crash", "in", "average", "because", "zero", "division", "raises", "error",
    "café", "naïve", "résumé", "→", "code", "test", "passes", "now",
];
fn prose(size: usize) -> String {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = String::new();
    let mut col = 0;
    while s.len() < size {
        let w = WORDS[r.below(WORDS.len())];
        if col + w.len() > 78 {
            s.push('\n');
            col = 0;
            if r.below(5) == 0 {
                s.push('\n');
            }
        } else if col > 0 {
            s.push(' ');
            col += 1;
        }
        s.push_str(w);
        col += w.len();
    }
    s
}
fn edits(size: usize) -> String {
    let mut r = Rng(7);
    let mut s = String::new();
    let mut k = 0;
    while s.len() < size {
        k += 1;
        s.push_str(&format!("I will fix the average in file {k}.\n\nEDIT src/m{k}.py\n<<<<<<< SEARCH\n    total = 0\n    for v in values:\n        total += v\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n\n"));
        if r.below(2) == 0 {
            s.push_str("READ src/a.py\n");
        }
    }
    s
}
fn hermes(size: usize) -> String {
    let mut s = String::new();
    let mut k = 0;
    while s.len() < size {
        k += 1;
        s.push_str(&format!("Reading file {k}.\n<tool_call>\n{{\"name\": \"read\", \"arguments\": {{\"path\": \"src/f{k}.py\"}}}}\n</tool_call>\n"));
    }
    s
}
fn mentions(size: usize) -> String {
    let mut r = Rng(11);
    let mut s = String::new();
    while s.len() < size {
        let w = WORDS[r.below(WORDS.len())];
        match r.below(4) {
            0 => s.push_str(&format!("read(path=\"src/{w}.py\") returns the file, ")),
            1 => s.push_str(&format!("read(path=path_of[{}], end=2 * n)\n", r.below(9))),
            2 => s.push_str("read the file first, then "),
            _ => s.push_str(&format!("Call read(path=\"src/{w}.py\") to see it. ")),
        }
        s.push_str(&prose(40 + r.below(40)));
        s.push('\n');
    }
    s
}
fn main() {
    let kind = std::env::args().nth(1).unwrap_or_default();
    let kib: Option<usize> = std::env::args().nth(2).and_then(|a| a.parse().ok());
    if let Some((op, filler)) = match kind.as_str() {
        "verb" => Some(("READ ", 'a')),
        "pyl" => Some(("[read(", 'a')),
        "path" => Some(("src/a.py\n", 'a')),
        "bcx" => Some(("read(path=p", 'a')),
        "bcl" => Some(("read(path=p)\n", 'a')),
        "bcls" => Some(("read(path=p)\n", ' ')),
        _ => None,
    } {
        let mut s = String::from(op);
        s.extend(std::iter::repeat_n(filler, kib.unwrap_or(1024) << 10));
        let mut d = TurnDecoder::new(Mode::Auto, Arc::new(Registry::builtin()));
        let mut ev = Vec::new();
        for c in s.as_bytes().chunks(4) {
            d.feed_into(std::str::from_utf8(c).unwrap_or_default(), &mut ev);
        }
        d.finish_into(&mut ev);
        println!("{}", ev.len());
        return;
    }
    let size = kib.unwrap_or(64) << 10;
    let input = match kind.as_str() {
        "prose" => prose(size),
        "bare" => {
            let mut s = prose(size);
            let cut = s.find('\n').map_or(0, |i| i + 1);
            s.insert_str(cut, "read(path=\"a.py\")\n");
            s
        }
        "mentions" => mentions(size),
        "edits" => edits(size),
        _ => hermes(size),
    };
    let reg = Arc::new(Registry::builtin());
    let mut r = Rng(99);
    let mut cuts = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let mut n = 3 + r.below(6);
        while i + n < input.len() && !input.is_char_boundary(i + n) {
            n += 1;
        }
        cuts.push(i);
        i += n;
    }
    cuts.push(input.len());
    let mut total = 0usize;
    for _ in 0..20 {
        let mut d = TurnDecoder::new(Mode::Auto, reg.clone());
        let mut ev = d.feed(&input);
        ev.extend(d.finish());
        total += ev.len();
        let mut d = TurnDecoder::new(Mode::Auto, reg.clone());
        let mut ev = Vec::new();
        for w in cuts.windows(2) {
            d.feed_into(&input[w[0]..w[1].min(input.len())], &mut ev);
        }
        d.finish_into(&mut ev);
        total += ev.len();
    }
    println!("{total}");
}
