//! Where a long agent run is: task i of N, attempt j of k, turn t, tokens so far, elapsed.
//!
//! A [`Progress`] is a [`View`] that passes every event on to the view it wraps (the readable
//! one, `--json`'s, or none) and keeps one status on stderr: an `indicatif` spinner line when
//! stderr is a terminal, else one plain line per turn and per attempt started
//! (`progress: task 2/24 fix-typo · attempt 1/4 · turn 3 · 1830 tokens · 41s`), so a log
//! shows where a run that went quiet was. The status never goes to stdout, so `--json` and the
//! bench's final table are unchanged.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent::View;
use agent::view::Event;

/// What the status line says.
#[derive(Debug)]
struct Where {
    task: Option<(usize, usize, String)>,
    attempt: Option<(u32, u32)>,
    turn: u32,
    /// Prompt plus generated tokens of every reply so far (of this task, in a bench).
    tokens: u64,
    started: Instant,
}

impl Where {
    fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some((i, n, name)) = &self.task {
            parts.push(format!("task {i}/{n} {name}"));
        }
        if let Some((j, k)) = self.attempt {
            parts.push(format!("attempt {j}/{k}"));
        }
        if self.turn > 0 {
            parts.push(format!("turn {}", self.turn));
        }
        parts.push(format!("{} tokens", self.tokens));
        parts.push(format!("{}s", self.started.elapsed().as_secs()));
        parts.join(" · ")
    }
}

#[derive(Debug)]
enum Out {
    /// A spinner on a terminal's stderr, redrawn in place.
    Bar(indicatif::ProgressBar),
    /// Plain `progress: …` lines on stderr.
    Lines,
}

#[derive(Debug)]
struct Shared {
    at: Where,
    out: Out,
}

/// The status of one run; clones share it (the bench's tasks, an attempts watcher).
#[derive(Debug, Clone)]
pub struct Progress {
    shared: Arc<Mutex<Shared>>,
}

/// The view a [`Progress`] wraps, with the status kept beside it.
#[derive(Debug)]
pub struct ProgressView {
    progress: Progress,
    inner: Box<dyn View>,
}

impl Progress {
    /// A spinner when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Progress::with_terminal(terminal)
    }

    /// As [`Progress::new`], with the terminal test given (tests).
    pub fn with_terminal(terminal: bool) -> Progress {
        let out = if terminal {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            Out::Bar(bar)
        } else {
            Out::Lines
        };
        Progress {
            shared: Arc::new(Mutex::new(Shared {
                at: Where {
                    task: None,
                    attempt: None,
                    turn: 0,
                    tokens: 0,
                    started: Instant::now(),
                },
                out,
            })),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Shared) -> R) -> R {
        f(&mut self.shared.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Says the status: redraws the spinner, or prints a line.
    fn tell(s: &Shared) {
        let line = s.at.line();
        match &s.out {
            Out::Bar(bar) => bar.set_message(line),
            Out::Lines => {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "progress: {line}");
                let _ = err.flush();
            }
        }
    }

    /// Task `i` of `n` (from 1) starts: turn, tokens and attempt start over.
    pub fn task(&self, i: usize, n: usize, name: &str) {
        self.with(|s| {
            s.at.task = Some((i, n, name.to_owned()));
            s.at.attempt = None;
            s.at.turn = 0;
            s.at.tokens = 0;
            Progress::tell(s);
        });
    }

    /// Attempt `j` of at most `k` starts.
    pub fn attempt(&self, j: u32, k: u32) {
        self.with(|s| {
            s.at.attempt = Some((j, k));
            s.at.turn = 0;
            Progress::tell(s);
        });
    }

    /// Runs `f` (which prints) with the spinner out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let bar = self.with(|s| match &s.out {
            Out::Bar(bar) => Some(bar.clone()),
            Out::Lines => None,
        });
        match bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Removes the spinner (the run is over).
    pub fn finish(&self) {
        self.with(|s| {
            if let Out::Bar(bar) = &s.out {
                bar.finish_and_clear();
            }
        });
    }

    /// This status around `inner`.
    pub fn view(&self, inner: Box<dyn View>) -> ProgressView {
        ProgressView {
            progress: self.clone(),
            inner,
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl View for ProgressView {
    fn show(&mut self, event: &Event) {
        self.progress.suspend(|| self.inner.show(event));
        self.progress.with(|s| match event {
            Event::Prompt { turn, .. } => {
                s.at.turn = *turn;
                Progress::tell(s);
            }
            Event::Reply {
                prompt_tokens,
                generated_tokens,
                ..
            } => {
                s.at.tokens += u64::from(*prompt_tokens) + u64::from(*generated_tokens);
                if let Out::Bar(_) = s.out {
                    Progress::tell(s);
                }
            }
            _ => {}
        });
    }
}
