//! Turning token bytes into text the consumer may see.
//!
//! Two small state machines, kept apart from llama.cpp so they can be tested byte by byte:
//! [`Utf8Assembler`] holds back the bytes of a character split across tokens, and
//! [`StopMatcher`] holds back text that might be the start of a stop string, so a stop string
//! is never emitted even when it arrives one byte at a time.

/// Assembles token bytes into valid UTF-8. A multi-byte character split across tokens is held
/// until its last byte arrives; bytes that can never form a character become U+FFFD, so the
/// stream never stalls on bad model output.
#[derive(Debug, Default)]
pub struct Utf8Assembler {
    pending: Vec<u8>,
}

impl Utf8Assembler {
    pub fn new() -> Utf8Assembler {
        Utf8Assembler::default()
    }

    /// Adds `bytes` and returns the text that is now complete (possibly empty).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (good, tail) = rest.split_at(e.valid_up_to());
                    // `good` is valid UTF-8 by construction of `valid_up_to`.
                    out.push_str(&String::from_utf8_lossy(good));
                    match e.error_len() {
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            rest = tail;
                            break;
                        }
                        Some(n) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &tail[n..];
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        let start = self.pending.len() - keep;
        self.pending.drain(..start);
        out
    }

    /// Bytes held back waiting for the rest of a character.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Ends the stream: an unfinished character becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// What [`StopMatcher::push`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopScan {
    /// No stop string yet; this text is safe to emit (possibly empty).
    Emit(String),
    /// A stop string matched; this text precedes it and is the last to emit.
    Stopped(String),
}

/// Finds stop strings across piece boundaries. Text that could still become a stop string is
/// held back (at most the longest stop string's length), everything else is released at once.
#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    pub fn new(stops: &[String]) -> StopMatcher {
        let stops = stops.iter().filter(|s| !s.is_empty()).cloned().collect();
        StopMatcher {
            stops,
            held: String::new(),
        }
    }

    /// Adds a piece of text.
    pub fn push(&mut self, piece: &str) -> StopScan {
        if self.stops.is_empty() {
            return StopScan::Emit(piece.to_owned());
        }
        self.held.push_str(piece);
        // The earliest match wins; `held` is short (held-back tail plus one piece).
        let first = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min();
        if let Some(at) = first {
            let out = self.held[..at].to_owned();
            self.held.clear();
            return StopScan::Stopped(out);
        }
        let keep = self.partial_suffix_len();
        let cut = self.held.len() - keep;
        let out = self.held[..cut].to_owned();
        self.held.drain(..cut);
        StopScan::Emit(out)
    }

    /// Ends the stream: text held back because it looked like a stop string's start is
    /// released.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Length of the longest suffix of `held` (starting on a char boundary) that is a proper
    /// prefix of some stop string.
    fn partial_suffix_len(&self) -> usize {
        let h = self.held.as_str();
        let longest = self.stops.iter().map(String::len).max().unwrap_or(0);
        let lo = h.len().saturating_sub(longest.saturating_sub(1));
        (lo..h.len())
            .filter(|&i| h.is_char_boundary(i))
            .find(|&i| self.stops.iter().any(|s| s.starts_with(&h[i..])))
            .map_or(0, |i| h.len() - i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembler_joins_split_characters() {
        let text = "aé€😀z";
        let bytes = text.as_bytes();
        let mut a = Utf8Assembler::new();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&a.push(std::slice::from_ref(b)));
        }
        out.push_str(&a.finish());
        assert_eq!(out, text);
    }

    #[test]
    fn assembler_replaces_invalid_bytes_and_keeps_going() {
        let mut a = Utf8Assembler::new();
        assert_eq!(a.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(a.push(b"\xe2\x82"), "");
        assert_eq!(a.pending(), 2);
        assert_eq!(a.finish(), "\u{FFFD}");
    }

    #[test]
    fn stop_matcher_never_leaks_a_split_stop() {
        let stops = vec!["<|im_end|>".to_owned()];
        let text = "hello <|im_end|> world";
        for split in 0..text.len() {
            let mut m = StopMatcher::new(&stops);
            let mut out = String::new();
            let mut stopped = false;
            for part in [&text[..split], &text[split..]] {
                match m.push(part) {
                    StopScan::Emit(s) => out.push_str(&s),
                    StopScan::Stopped(s) => {
                        out.push_str(&s);
                        stopped = true;
                        break;
                    }
                }
            }
            assert!(stopped, "split at {split}");
            assert_eq!(out, "hello ", "split at {split}");
        }
    }

    #[test]
    fn stop_matcher_releases_false_starts() {
        let mut m = StopMatcher::new(&["END".to_owned()]);
        assert_eq!(m.push("the E"), StopScan::Emit("the ".to_owned()));
        assert_eq!(m.push("N"), StopScan::Emit(String::new()));
        assert_eq!(m.push("D!"), StopScan::Stopped(String::new()));
        let mut m = StopMatcher::new(&["END".to_owned()]);
        assert_eq!(m.push("EN"), StopScan::Emit(String::new()));
        assert_eq!(m.push("x"), StopScan::Emit("ENx".to_owned()));
        assert_eq!(m.push("EN"), StopScan::Emit(String::new()));
        assert_eq!(m.finish(), "EN");
    }

    #[test]
    fn stop_matcher_takes_the_earliest_of_several() {
        let mut m = StopMatcher::new(&["bb".to_owned(), "abc".to_owned()]);
        assert_eq!(m.push("xab"), StopScan::Emit("x".to_owned()));
        assert_eq!(m.push("bc"), StopScan::Stopped("a".to_owned()));
    }
}
