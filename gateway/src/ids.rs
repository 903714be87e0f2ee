//! Response and tool-call ids: unique within a server's life and unpredictable across
//! restarts, without a random-number dependency.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out ids; clones share the counter.
#[derive(Debug, Clone)]
pub struct IdGen {
    counter: Arc<AtomicU64>,
    /// `RandomState` is seeded randomly per process, which is all the unpredictability an id
    /// needs; `None` gives sequential ids, for tests that compare bytes.
    keys: Option<RandomState>,
}

impl Default for IdGen {
    fn default() -> Self {
        IdGen::new()
    }
}

impl IdGen {
    pub fn new() -> IdGen {
        IdGen {
            counter: Arc::new(AtomicU64::new(0)),
            keys: Some(RandomState::new()),
        }
    }

    /// Ids 0, 1, 2, … in hex: predictable, for byte-exact tests.
    pub fn sequential() -> IdGen {
        IdGen {
            counter: Arc::new(AtomicU64::new(0)),
            keys: None,
        }
    }

    fn next(&self) -> u64 {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        match &self.keys {
            Some(k) => k.hash_one(n),
            None => n,
        }
    }

    /// `chatcmpl-…` / `cmpl-…` ids.
    pub fn response_id(&self, prefix: &str) -> String {
        format!("{prefix}-{:016x}", self.next())
    }

    /// `call_…` ids, in the shape OpenAI clients expect.
    pub fn call_id(&self) -> String {
        format!("call_{:016x}", self.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct() {
        let g = IdGen::new();
        let a = g.call_id();
        let b = g.clone().call_id();
        assert_ne!(a, b);
        assert!(a.starts_with("call_") && a.len() == 21, "{a}");
        let s = IdGen::sequential();
        assert_eq!(s.response_id("cmpl"), "cmpl-0000000000000000");
        assert_eq!(s.call_id(), "call_0000000000000001");
    }
}
