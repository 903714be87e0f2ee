//! `bellows agent --attempts N`: several independent attempts at one task, and a checker (or a
//! vote) that picks one. A small model's first try often fails where one of a few cheap tries
//! succeeds; with a check that tells them apart, pass@k is what the user gets.
//!
//! Each attempt is a whole session ([`crate::run::run`]) in an isolated copy of the repository
//! ([`crate::isolate::isolate`], under `.bellows/isolated/ID/`), so its journal, undo and
//! `bellows agent promote` / `discard` work per attempt and the real tree is untouched until
//! the winner is settled. Attempt `k` samples at [`temperature`]`(k)` with seed
//! `base + k - 1` ([`sampling`]), and even attempts lay the whole protocol's first message out
//! the other way ([`layout`]).
//!
//! Choosing ([`choose`]): with a check (`--verify`, [`Config::verify`]) the first attempt whose
//! check passed wins, and no further attempt runs once one has. Without one every attempt runs,
//! and those that ended with DONE vote by their resulting changes: attempts whose changed
//! files hold identical bytes (and modes, and link targets) against the base form a group, the
//! largest group wins (on a tie, the group whose first member ran first, being the coolest
//! sample), and the report says how many attempts agreed.
//!
//! Settling ([`settle`]): the winner's changes are shown as one diff and asked for through the
//! [`Approver`] (approval `ask` or `edits`) or promoted at once (`auto`); every copy is then
//! discarded unless `keep`. An attempt that fails (the engine, the journal) is recorded and
//! the others still run; a failure of the repository itself (isolation, removing a copy) ends
//! the run, after removing the copies made so far.
//!
//! The attempts run over the [`Engine`] trait, as many side by side as the engine has slots
//! (one after another on a one-slot engine). The local llama.cpp engine runs its slots as
//! sequences of one context, decoded in one batch per step, and shares their evaluated prompt prefix: the
//! system prompt and the task's first message are the same bytes for every attempt, so the
//! prefix is evaluated once.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use models::{Engine, Sampling};

use crate::config::Config;
use crate::isolate::{self, Change, IsolateError};
use crate::policy::{Approval, ApprovalMode, Approver, Policy};
use crate::run::{AgentError, Outcome, StopReason};
use crate::view::{Event, View};
use crate::workspace::Workspace;

/// The temperatures of attempts 2, 3 and 4; later attempts go round them again, each with a
/// seed of its own.
pub const LATER_TEMPERATURES: [f32; 3] = [0.4, 0.7, 0.9];
/// The first attempt's seed when the profile sets none, so that a run can be repeated.
pub const DEFAULT_SEED: u32 = 0x5eed;

/// The temperature schedule: attempt 1 (numbered from 1) samples at the profile's
/// temperature `base` (often 0, greedy: the model's best single guess); attempts 2, 3 and 4
/// at 0.4, 0.7 and 0.9, and attempts 5, 6, 7 … at 0.4, 0.7, 0.9 again — but never cooler than
/// `base`, so a profile that samples hot is not cooled down by its retries. Not hotter: the
/// coder profiles sample without top-k, top-p or min-p, where 1.0 draws from the whole
/// vocabulary, and the harder suite's solves so far began at 0.4 and 0.7 (benches/README.md).
pub fn temperature(number: u32, base: f32) -> f32 {
    if number <= 1 {
        return base;
    }
    let i = usize::try_from(number - 2).unwrap_or(0) % LATER_TEMPERATURES.len();
    LATER_TEMPERATURES[i].max(base)
}

/// Attempt `number`'s sampling: `base` with the scheduled [`temperature`] and seed
/// `base.seed (else DEFAULT_SEED) + number - 1`, so no two attempts share a seed.
pub fn sampling(base: &Sampling, number: u32) -> Sampling {
    let first = base.seed.unwrap_or(DEFAULT_SEED);
    Sampling {
        temperature: temperature(number, base.temperature),
        seed: Some(first.wrapping_add(number.saturating_sub(1))),
        ..base.clone()
    }
}

/// Attempt `number`'s first-message layout ([`Config::files_apart`]): the configured one on
/// odd attempts, the other on even ones. The two layouts fail on different tasks (the suite's
/// figures in benches/README.md), which varies the attempts more than the temperature alone.
pub fn layout(configured: bool, number: u32) -> bool {
    configured ^ number.is_multiple_of(2)
}

/// Whether attempt `number` shows only the files the task points at ([`Config::focus`]):
/// attempts 3 and 4 (then 7 and 8, …), so that each layout runs once focused and once not
/// within four attempts, and the first attempt is the configured session's. Where the task's
/// wrong command runs few functions, a focused attempt shows only those
/// ([`crate::whole::functions_message`]).
pub fn focus(number: u32) -> bool {
    number.saturating_sub(1) / 2 % 2 == 1
}

/// Whether attempt `number`, focused, writes the function where the value first goes wrong
/// anew ([`Config::anew`]): the second of each focused pair (4, 8, …; every even one under
/// `--focus`), so that the function is shown once as it is and once without its body.
pub fn anew(focused: bool, number: u32) -> bool {
    focused && number.is_multiple_of(2)
}

/// The policy each attempt's session runs under. An attempt works in a disposable copy, so
/// its edits need nobody's approval (`ask` runs as `edits`: edits automatic, commands still
/// asked unless `--allow-run` matches); what reaches the real tree is asked for once, as the
/// winner's diff. `plan`, `edits` and `auto` are unchanged.
pub fn attempt_policy(policy: &Policy) -> Policy {
    let mut p = policy.clone();
    if p.mode == ApprovalMode::Ask {
        p.mode = ApprovalMode::Edits;
    }
    p
}

#[derive(Debug, thiserror::Error)]
pub enum AttemptsError {
    /// Isolating attempt `number` failed; `left` names the earlier copies that could not be
    /// removed (normally none).
    #[error("attempt {number}: {source}{}", left_over(.left))]
    Isolate {
        number: u32,
        source: IsolateError,
        left: Vec<String>,
    },
    #[error("removing the copy of attempt {number} ({copy}): {source}")]
    Discard {
        number: u32,
        copy: String,
        source: IsolateError,
    },
    /// Promoting the winner failed; its copy is kept, the others removed (but `left`).
    #[error(
        "promoting attempt {number} failed: {source}; its copy is kept: \
         `bellows agent promote {copy}` (with --force to overwrite) or `bellows agent discard {copy}`{}",
        left_over(.left)
    )]
    Promote {
        number: u32,
        copy: String,
        source: IsolateError,
        left: Vec<String>,
    },
}

fn left_over(left: &[String]) -> String {
    if left.is_empty() {
        String::new()
    } else {
        format!(" (copies not removed: {})", left.join(", "))
    }
}

/// Why one attempt has no result to vote with. The other attempts run regardless.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    #[error(transparent)]
    Session(#[from] AgentError),
    #[error("reading its changes: {0}")]
    Changes(#[from] IsolateError),
}

/// One attempt, as it ended.
#[derive(Debug)]
pub struct Attempt {
    /// Numbered from 1, in the order they ran.
    pub number: u32,
    /// The isolated copy's id (`bellows agent promote ID`).
    pub copy: String,
    /// The copy's root.
    pub root: PathBuf,
    pub sampling: Sampling,
    pub result: Result<Outcome, AttemptError>,
    /// What promoting it would do, sorted by path; empty when it failed.
    pub changes: Vec<Change>,
    /// The changes with what each leaves behind (bytes' sha256 and mode, link target): equal
    /// keys mean identical resulting trees, which is what [`choose`] votes by.
    pub key: String,
    pub wall: Duration,
    /// How many of the checks the attempts' models wrote first ([`crate::owncheck`]) pass on
    /// this attempt's result (0 when none was written, or it did not end with DONE).
    pub checks_passed: usize,
}

impl Attempt {
    /// How the session ended, or `None` when it failed.
    pub fn reason(&self) -> Option<StopReason> {
        self.result.as_ref().ok().map(|o| o.reason)
    }

    /// It ended with an accepted DONE (checked or not).
    pub fn done(&self) -> bool {
        matches!(self.reason(), Some(StopReason::Done | StopReason::Verified))
    }

    /// It ended with a DONE its check passed.
    pub fn passed(&self) -> bool {
        self.reason() == Some(StopReason::Verified)
    }

    /// One line: number, sampling, how it ended, what it changed.
    pub fn summary(&self) -> String {
        let how = match &self.result {
            Ok(o) => format!("{} after {} turns", o.reason.as_str(), o.turns),
            Err(e) => format!("failed: {e}"),
        };
        let files = match self.changes.len() {
            0 => "no changes".to_owned(),
            1 => "1 path changed".to_owned(),
            n => format!("{n} paths changed"),
        };
        format!(
            "attempt {} (temperature {}, seed {}): {how}, {files}",
            self.number,
            self.sampling.temperature,
            self.sampling.seed.unwrap_or_default()
        )
    }
}

/// Told about each attempt as it starts and ends; the CLI prints, the bench judges each
/// attempt's copy with the task's hidden `verify.sh` before it goes.
pub trait Watcher {
    /// Attempt `number` of at most `of` is about to run in `copy`.
    fn starting(&mut self, _number: u32, _of: u32, _copy: &Workspace, _sampling: &Sampling) {}
    /// `attempt` ended; its copy still exists.
    fn finished(&mut self, _attempt: &Attempt, _copy: &Workspace) {}
}

/// A watcher that does nothing.
#[derive(Debug, Default)]
pub struct Unwatched;

impl Watcher for Unwatched {}

/// Runs up to `n` attempts at `cfg.task`, each in its own isolated copy of `ws` with
/// [`sampling`]`(&cfg.sampling, k)` and [`attempt_policy`]. With a check (`cfg.verify`) no
/// attempt starts after one whose check passed. It also stops early when `cfg.interrupt`
/// fired. Every copy is left in place for [`settle`]; on an error, the copies made so far are
/// removed first (unless `keep`).
///
/// When the engine runs several sequences at once ([`models::ModelInfo::slots`]), up to that
/// many attempts run side by side, each session on its own thread: their prompts share the
/// system prompt and the task's first message, which the engine evaluates once. Once one of
/// them passes its check, the others still running are stopped (they end as `user_quit`).
/// Side-by-side sessions show nothing through `view` (their turns would interleave); the
/// watcher hears of each attempt as before, in attempt order, and each has its journal.
pub async fn run_attempts(
    engine: &dyn Engine,
    ws: &Workspace,
    cfg: &Config,
    n: u32,
    keep: bool,
    view: &mut dyn View,
    watcher: &mut dyn Watcher,
) -> Result<Vec<Attempt>, AttemptsError> {
    let n = n.max(1);
    let side = engine.info().slots.clamp(1, n);
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut next = 1;
    while next <= n {
        if cfg.interrupt.fired() {
            break;
        }
        let wave: Vec<u32> = (next..=n).take(side as usize).collect();
        next += wave.len() as u32;
        let mut prepared = Vec::new();
        for &number in &wave {
            match prepare(ws, cfg, number) {
                Ok(p) => prepared.push(p),
                Err(source) => {
                    let mut left: Vec<String> = discard_all(ws, &attempts, None, keep)
                        .into_iter()
                        .map(|(copy, _)| copy)
                        .collect();
                    for p in &prepared {
                        if !keep && isolate::discard(ws, &p.copy).is_err() {
                            left.push(p.copy.clone());
                        }
                    }
                    return Err(AttemptsError::Isolate {
                        number,
                        source,
                        left,
                    });
                }
            }
        }
        for p in &prepared {
            watcher.starting(p.number, n, &p.copy_ws, &p.session.sampling);
        }
        let results = if prepared.len() == 1 {
            let p = &prepared[0];
            let started = Instant::now();
            let result =
                crate::run::run(engine, &p.copy_ws, &p.session, &mut Unattended, view).await;
            vec![(result, started.elapsed())]
        } else {
            side_by_side(engine, &prepared, &cfg.interrupt)
        };
        let mut passed = false;
        for (p, (result, wall)) in prepared.into_iter().zip(results) {
            let (attempt, copy_ws) = conclude(ws, p, result, wall);
            watcher.finished(&attempt, &copy_ws);
            passed |= attempt.passed();
            attempts.push(attempt);
        }
        if passed {
            break;
        }
    }
    vote_by_checks(ws, &mut attempts);
    Ok(attempts)
}

/// The generated-tests vote (CodeT, Chen et al. 2022): each attempt that ended with DONE is
/// run against every check an attempt's model wrote first, on its own copy; [`choose`] ranks
/// results by how many they pass before it counts identical results.
fn vote_by_checks(ws: &Workspace, attempts: &mut [Attempt]) {
    let checks: Vec<crate::owncheck::OwnCheck> = attempts
        .iter()
        .filter_map(|a| a.result.as_ref().ok()?.own_check.clone())
        .collect();
    if checks.is_empty() {
        return;
    }
    for a in attempts.iter_mut().filter(|a| a.done()) {
        let Ok(mut copy) = Workspace::new(&a.root) else {
            continue;
        };
        copy.confinement = ws.confinement;
        a.checks_passed = checks
            .iter()
            .filter(|c| crate::owncheck::passes(&copy, c))
            .count();
    }
}

/// An attempt ready to run: its copy and its session's settings.
struct Prepared {
    number: u32,
    copy: String,
    copy_ws: Workspace,
    session: Config,
}

fn prepare(ws: &Workspace, cfg: &Config, number: u32) -> Result<Prepared, IsolateError> {
    let (copy, mut copy_ws) = isolate::isolate(ws)?;
    copy_ws.confinement = ws.confinement;
    let mut session = cfg.clone();
    session.sampling = sampling(&cfg.sampling, number);
    session.files_apart = layout(cfg.files_apart, number);
    session.focus = cfg.focus || focus(number);
    session.anew = cfg.anew || anew(session.focus, number);
    session.policy = attempt_policy(&cfg.policy);
    Ok(Prepared {
        number,
        copy,
        copy_ws,
        session,
    })
}

fn conclude(
    ws: &Workspace,
    p: Prepared,
    result: Result<Outcome, AgentError>,
    wall: Duration,
) -> (Attempt, Workspace) {
    let (result, changes) = match result {
        Ok(outcome) => match isolate::changes(ws, &p.copy) {
            Ok(changes) => (Ok(outcome), changes),
            Err(e) => (Err(AttemptError::Changes(e)), Vec::new()),
        },
        Err(e) => (Err(AttemptError::Session(e)), Vec::new()),
    };
    let key = change_key(&p.copy_ws, &changes);
    let attempt = Attempt {
        number: p.number,
        copy: p.copy,
        root: p.copy_ws.root().to_owned(),
        sampling: p.session.sampling,
        result,
        changes,
        key,
        wall,
        checks_passed: 0,
    };
    (attempt, p.copy_ws)
}

/// Runs the prepared attempts at once, one thread (and one single-threaded runtime) each,
/// so a command one session runs never holds up another's generation. Each session gets its
/// own interrupt: Ctrl-C fires them all, and an attempt whose check passed fires the others'.
fn side_by_side(
    engine: &dyn Engine,
    prepared: &[Prepared],
    interrupt: &crate::Interrupt,
) -> Vec<(Result<Outcome, AgentError>, Duration)> {
    let stops: Vec<crate::Interrupt> = prepared.iter().map(|_| crate::Interrupt::new()).collect();
    let finished = std::sync::Mutex::new(vec![false; prepared.len()]);
    std::thread::scope(|scope| {
        let handles: Vec<_> = prepared
            .iter()
            .zip(&stops)
            .enumerate()
            .map(|(i, (p, stop))| {
                let mut session = p.session.clone();
                session.interrupt = stop.clone();
                let (stops, finished) = (&stops, &finished);
                scope.spawn(move || {
                    let started = Instant::now();
                    let result = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt.block_on(crate::run::run(
                            engine,
                            &p.copy_ws,
                            &session,
                            &mut Unattended,
                            &mut crate::view::Quiet,
                        )),
                        Err(e) => Err(AgentError::Generation(format!(
                            "could not start the attempt's runtime: {e}"
                        ))),
                    };
                    if matches!(&result, Ok(o) if o.reason == StopReason::Verified) {
                        for (j, other) in stops.iter().enumerate() {
                            if j != i {
                                other.fire();
                            }
                        }
                    }
                    if let Ok(mut f) = finished.lock() {
                        f[i] = true;
                    }
                    (result, started.elapsed())
                })
            })
            .collect();
        // Ctrl-C reaches every session.
        loop {
            let all = finished.lock().map_or(true, |f| f.iter().all(|&x| x));
            if all {
                break;
            }
            if interrupt.fired() {
                for stop in &stops {
                    stop.fire();
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    (
                        Err(AgentError::Generation(
                            "the attempt's thread panicked".to_owned(),
                        )),
                        Duration::ZERO,
                    )
                })
            })
            .collect()
    })
}

/// The approver of an attempt's session: nobody watches a copy, so whatever it would ask
/// (in `edits` mode, a command `--allow-run` does not match) is declined, and the model hears so.
#[derive(Debug)]
struct Unattended;

impl Approver for Unattended {
    fn approve(&mut self, _action: &codec::Action, _preview: &str) -> Approval {
        Approval::No
    }
}

/// The vote key of a copy's changes: each path with the sha256 and mode of what the copy
/// holds there, its link target, or its deletion.
fn change_key(copy: &Workspace, changes: &[Change]) -> String {
    let mut key = String::new();
    for c in changes {
        match c {
            Change::Write(path) => {
                // An unreadable file votes with no other attempt's file.
                let hash = std::fs::read(copy.root().join(path))
                    .map_or_else(|e| format!("unreadable ({e})"), |b| crate::act::sha256(&b));
                let mode = copy.mode(path).unwrap_or_default();
                key.push_str(&format!("write {path} {hash} {mode:o}\n"));
            }
            Change::Link { path, target } => {
                key.push_str(&format!("link {path} {}\n", target.display()))
            }
            Change::Delete(path) => key.push_str(&format!("delete {path}\n")),
        }
    }
    key
}

/// Which attempt wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// `attempts[index]` is the first whose check passed.
    Checked { index: usize },
    /// No check: `attempts[index]` is the first of the largest group of DONE attempts with
    /// identical changes, `agreed` attempts strong, out of `of` run.
    Voted {
        index: usize,
        agreed: usize,
        of: usize,
    },
    /// No attempt passed its check (or, without one, finished with DONE).
    Nothing,
}

impl Choice {
    pub fn winner(&self) -> Option<usize> {
        match *self {
            Choice::Checked { index } | Choice::Voted { index, .. } => Some(index),
            Choice::Nothing => None,
        }
    }
}

/// Picks the winner of `attempts`; `checked` says whether they ran with a check. Without
/// one, the result that passes most of the checks the attempts' models wrote first wins
/// ([`Attempt::checks_passed`]), then the largest group of identical results; among groups of one size, the one whose
/// changes touch a file `task` names and touch the fewest files it does not name (the 0.5B,
/// asked to append a line to .gitignore, rewrote README.md at temperature 0 and said DONE,
/// while a warmer attempt changed .gitignore alone), then the earliest (the coolest sample).
pub fn choose(attempts: &[Attempt], checked: bool, task: &str) -> Choice {
    if checked {
        return match attempts.iter().position(Attempt::passed) {
            Some(index) => Choice::Checked { index },
            None => Choice::Nothing,
        };
    }
    // Groups in order of their first member, so that the strict `>` keeps the earliest on a tie.
    let mut groups: Vec<(&str, usize, usize)> = Vec::new();
    for (i, a) in attempts.iter().enumerate().filter(|(_, a)| a.done()) {
        match groups.iter_mut().find(|(k, _, _)| *k == a.key) {
            Some(g) => g.2 += 1,
            None => groups.push((&a.key, i, 1)),
        }
    }
    let rank = |first: usize, size: usize| {
        let (named, unnamed) = named_changes(&attempts[first].changes, task);
        (
            attempts[first].checks_passed,
            size,
            named > 0,
            std::cmp::Reverse(unnamed),
        )
    };
    let mut best: Option<(usize, usize)> = None;
    for (_, first, size) in groups {
        if best.is_none_or(|(f, n)| rank(first, size) > rank(f, n)) {
            best = Some((first, size));
        }
    }
    match best {
        Some((index, agreed)) => Choice::Voted {
            index,
            agreed,
            of: attempts.len(),
        },
        None => Choice::Nothing,
    }
}

/// How many of `changes` touch a file `task` names (by its path, or by its file name when
/// that has an extension), and how many do not.
fn named_changes(changes: &[Change], task: &str) -> (usize, usize) {
    let words: Vec<&str> = task
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ',' | ';' | '(' | ')'))
        .map(|w| w.trim_end_matches(['.', ':', '!', '?']))
        .filter(|w| !w.is_empty())
        .collect();
    let named = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        words
            .iter()
            .any(|w| *w == path || (name.contains('.') && *w == name))
    };
    let n = changes.iter().filter(|c| named(c.path())).count();
    (n, changes.len() - n)
}

/// What happened to the winner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Its changes were applied to the real tree.
    Promoted(Vec<Change>),
    /// The user declined its diff.
    Declined,
    /// No winner, a winner that changed nothing, or an interrupted run: nothing applied.
    Nothing,
}

/// One run of `--attempts`: every attempt, the choice and what became of it.
#[derive(Debug)]
pub struct Report {
    pub attempts: Vec<Attempt>,
    /// The attempts ran with a check (`--verify`).
    pub checked: bool,
    pub choice: Choice,
    pub settled: Settled,
    /// The copies still on disk (`keep`, or an interrupted run): their ids.
    pub kept: Vec<String>,
    /// Copies that should have been removed and could not be, with why.
    pub not_removed: Vec<String>,
}

impl Report {
    /// One line per attempt, then the choice and what became of it.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for a in &self.attempts {
            s.push_str(&a.summary());
            s.push('\n');
        }
        let n = self.attempts.len();
        let number = |i: usize| self.attempts.get(i).map_or(0, |a| a.number);
        match self.choice {
            Choice::Checked { index } => s.push_str(&format!(
                "chosen: attempt {} of {n}, the first whose check passed\n",
                number(index)
            )),
            Choice::Voted { index, agreed, of } => s.push_str(&format!(
                "chosen: attempt {}, {agreed}/{of} attempts agreed on its changes\n",
                number(index)
            )),
            Choice::Nothing if self.checked => {
                s.push_str(&format!("no attempt of {n} passed its check\n"))
            }
            Choice::Nothing => s.push_str(&format!("no attempt of {n} ended with DONE\n")),
        }
        match &self.settled {
            Settled::Promoted(changes) => {
                s.push_str(&format!("promoted {} paths\n", changes.len()));
            }
            Settled::Declined => s.push_str("declined: nothing applied\n"),
            Settled::Nothing => s.push_str("nothing applied\n"),
        }
        if !self.kept.is_empty() {
            s.push_str(&format!("copies kept: {}\n", self.kept.join(", ")));
        }
        for e in &self.not_removed {
            s.push_str(&format!("{e}\n"));
        }
        s
    }
}

/// Shows the winner's changes (against the real tree) as one diff, then asks `approver`
/// unless `mode` is `auto`, and promotes them. A failed promotion keeps the winner's copy
/// and says how to promote it by hand; the other copies are removed then.
pub fn settle(
    ws: &Workspace,
    attempts: &[Attempt],
    choice: Choice,
    mode: ApprovalMode,
    approver: &mut dyn Approver,
    view: &mut dyn View,
    keep: bool,
) -> Result<Settled, AttemptsError> {
    let Some(winner) = choice.winner().and_then(|i| attempts.get(i)) else {
        return Ok(Settled::Nothing);
    };
    if winner.changes.is_empty() {
        return Ok(Settled::Nothing);
    }
    let shown = preview(ws, winner);
    view.show(&Event::Preview {
        turn: 0,
        shown: shown.clone(),
    });
    let approved = match mode {
        ApprovalMode::Auto => true,
        ApprovalMode::Plan => false,
        ApprovalMode::Ask | ApprovalMode::Edits => {
            // The approver judges actions; promoting is presented as the `promote` tool with
            // the copy it would apply.
            let action = codec::Action::Client {
                name: "promote".to_owned(),
                arguments: serde_json::json!({ "attempt": winner.number, "copy": winner.copy }),
            };
            approver.approve(&action, &shown) == Approval::Yes
        }
    };
    if !approved {
        return Ok(Settled::Declined);
    }
    match isolate::promote(ws, &winner.copy, false) {
        Ok(changes) => Ok(Settled::Promoted(changes)),
        Err(source) => {
            // The winner stays for a promotion by hand; the losers go (unless kept).
            let left = discard_all(ws, attempts, Some(winner.number), keep);
            Err(AttemptsError::Promote {
                number: winner.number,
                copy: winner.copy.clone(),
                source,
                left: left.into_iter().map(|(copy, _)| copy).collect(),
            })
        }
    }
}

/// The winner's changes as one unified diff against the real tree.
fn preview(ws: &Workspace, winner: &Attempt) -> String {
    let text = |bytes: Option<Vec<u8>>| bytes.map(|b| String::from_utf8_lossy(&b).into_owned());
    let mut out = format!("attempt {} ({}):\n", winner.number, winner.copy);
    for c in &winner.changes {
        let old = text(ws.read(c.path()).ok().flatten());
        match c {
            Change::Write(path) => {
                let new = text(std::fs::read(winner.root.join(path)).ok());
                out.push_str(&crate::diff::unified(path, old.as_deref(), new.as_deref()));
            }
            Change::Delete(path) => {
                out.push_str(&crate::diff::unified(path, old.as_deref(), None));
            }
            Change::Link { path, target } => {
                out.push_str(&format!("link {path} -> {}\n", target.display()));
            }
        }
    }
    out
}

/// Removes every attempt's copy but attempt `except`'s, unless `keep`. Tries them all; returns
/// those it could not remove, with why.
fn discard_all(
    ws: &Workspace,
    attempts: &[Attempt],
    except: Option<u32>,
    keep: bool,
) -> Vec<(String, AttemptsError)> {
    if keep {
        return Vec::new();
    }
    let mut failed = Vec::new();
    for a in attempts.iter().filter(|a| Some(a.number) != except) {
        if let Err(source) = isolate::discard(ws, &a.copy) {
            let e = AttemptsError::Discard {
                number: a.number,
                copy: a.copy.clone(),
                source,
            };
            failed.push((a.copy.clone(), e));
        }
    }
    failed
}

/// `bellows agent --attempts N`: [`run_attempts`], [`choose`], [`settle`] under
/// `cfg.policy.mode`, then every copy removed unless `keep`. An interrupted run (Ctrl-C)
/// applies nothing and keeps its copies, for `bellows agent promote` by hand.
#[allow(clippy::too_many_arguments)]
pub async fn attempt(
    engine: &dyn Engine,
    ws: &Workspace,
    cfg: &Config,
    n: u32,
    keep: bool,
    approver: &mut dyn Approver,
    view: &mut dyn View,
    watcher: &mut dyn Watcher,
) -> Result<Report, AttemptsError> {
    let attempts = run_attempts(engine, ws, cfg, n, keep, view, watcher).await?;
    let choice = choose(&attempts, cfg.verify.is_some(), &cfg.task);
    let interrupted = cfg.interrupt.fired();
    let settled = if interrupted {
        Settled::Nothing
    } else {
        settle(ws, &attempts, choice, cfg.policy.mode, approver, view, keep)?
    };
    let keep = keep || interrupted;
    // Reported, not raised: by now the winner may be promoted, which an error would hide.
    let not_removed = discard_all(ws, &attempts, None, keep)
        .into_iter()
        .map(|(_, e)| e.to_string())
        .collect();
    let kept = if keep {
        attempts.iter().map(|a| a.copy.clone()).collect()
    } else {
        Vec::new()
    };
    Ok(Report {
        attempts,
        checked: cfg.verify.is_some(),
        choice,
        settled,
        kept,
        not_removed,
    })
}
