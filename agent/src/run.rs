//! The loop: prompt → generate → decode → act → observe, until a [`StopReason`].

use std::collections::BTreeSet;
use std::sync::Arc;

use codec::render::{quote_argv, render};
use codec::{Action, ActionProposal, Registry, TurnDecoder};
use models::{Engine, GenEvent, GenerateRequest, Prompt};

use crate::act::{self, Observation, Plan};
pub use crate::config::Config;
use crate::history::{History, TurnRecord};
use crate::journal::{Journal, JournalError};
use crate::policy::{self, Approval, ApprovalMode, Approver, Verdict};
use crate::prompt;
use crate::record::{REPETITION, Tally, loop_key, turn_record};
use crate::view::{Event, View};
use crate::workspace::Workspace;

/// Why a session ended. Each has a test in `tests/loop.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// DONE, with no `--verify` to check it.
    Done,
    /// DONE, and `--verify` passed.
    Verified,
    MaxTurns,
    /// `stall_turns` turns in a row without a valid action.
    Stall,
    /// The same action with the same result `loop_repeats` times in a row.
    Loop,
    /// The token budget is spent, or the prompt cannot fit even fully compacted.
    Budget,
    /// The user answered `q`, or pressed Ctrl-C ([`Config::interrupt`]).
    Quit,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Done => "done",
            StopReason::Verified => "verified",
            StopReason::MaxTurns => "max_turns",
            StopReason::Stall => "stall",
            StopReason::Loop => "loop",
            StopReason::Budget => "budget",
            StopReason::Quit => "user_quit",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Engine(#[from] models::EngineError),
    #[error("generation failed: {0}")]
    Generation(String),
    #[error("n_ctx {n_ctx} leaves no room after the reply reserve of {reserve} tokens")]
    NoRoom { n_ctx: u32, reserve: u32 },
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub reason: StopReason,
    pub session: String,
    pub turns: u32,
    /// DONE claims that `--verify` rejected.
    pub false_successes: u32,
    /// Actions refused as echoes of the protocol's help text.
    pub echoes: u32,
    /// DONE refused because no action had succeeded yet in the session (plan mode).
    pub premature_done: u32,
    /// DONE refused because nothing in the repository changed since the session started
    /// (every mode that allows changes).
    pub no_change: u32,
    pub tokens: u64,
    /// The check the model wrote first ([`crate::owncheck`]), if it kept one: `--attempts`
    /// runs every attempt's change against every attempt's check.
    pub own_check: Option<crate::owncheck::OwnCheck>,
}

/// Runs one session to its stop reason.
pub async fn run(
    engine: &dyn Engine,
    ws: &Workspace,
    cfg: &Config,
    approver: &mut dyn Approver,
    view: &mut dyn View,
) -> Result<Outcome, AgentError> {
    let context = context_chars(engine, cfg);
    // The task's own commands, run on the files as they are: what they print joins the
    // first message, and later runs are compared with it.
    let probes = session_probes(ws, cfg);
    let before = crate::probe::run_all(ws, &probes);
    let (probes, before) = crate::found::keep_useful(probes, before);
    let (probes, before) = crate::found::steady(ws, probes, before);
    // What the wrong commands run ([`crate::trace`]): shown once with what they print.
    // The check, where the task names it as what fails, is traced and shown the same way,
    // though the probes leave it out (it runs after every change anyway).
    let check = cfg
        .verify
        .as_deref()
        .filter(|_| cfg.probes)
        .and_then(|c| crate::localise::check_probe(&cfg.task, ws, c));
    let (traced, origin) = if cfg.probes {
        let mut wrong = probes.clone();
        wrong.extend(check.clone());
        let traced = crate::localise::trace(ws, &wrong);
        let origin = crate::origin::find(&cfg.task, &wrong, &traced);
        (traced, origin)
    } else {
        (Vec::new(), None)
    };
    let mut shown_before = before.clone();
    shown_before.extend(check.map_or_else(Vec::new, |c| crate::probe::run_all(ws, &[c])));
    // Calls of the origin's function on emptied arguments that run cleanly now must print
    // the same after the change ([`crate::origin::edge_probes`]); not shown before the first
    // turn, only once a change made them print otherwise.
    let mut edge_notes = String::new();
    let (probes, before) = match &origin {
        Some(o) => {
            let edges = crate::origin::edge_probes(&cfg.task, o);
            let edge_probes: Vec<crate::probe::Probe> =
                edges.iter().map(|e| e.probe.clone()).collect();
            let runs = crate::probe::run_all(ws, &edge_probes);
            let mut probes = probes;
            let mut before = before;
            for e in edges {
                let Some(r) = runs.iter().find(|r| r.command == e.probe.command) else {
                    continue;
                };
                if r.code == Some(0) && !r.timed_out {
                    edge_notes.push_str(&crate::origin::edge_note(&e, r).unwrap_or_default());
                    probes.push(e.probe);
                    before.push(r.clone());
                }
            }
            (probes, before)
        }
        None => (probes, before),
    };
    let check_files = protected_files(ws, cfg, &probes, &before);
    // A focused attempt of the whole protocol shows only the functions the wrong command
    // runs, where it runs few — only the one where its value first goes wrong, where the
    // trace shows one ([`crate::origin`]); otherwise the files the task points at.
    let layout = cfg.layout();
    let focused = match &origin {
        Some(o) => crate::origin::only(&traced, o),
        None => traced.clone(),
    };
    let functions = (cfg.protocol == prompt::Protocol::Whole && layout.focus)
        .then(|| {
            let protected: Vec<String> = check_files.iter().map(|f| f.path.clone()).collect();
            crate::whole::functions_message(
                ws,
                &cfg.task,
                context,
                layout,
                &focused,
                &protected,
                match &origin {
                    Some(o) if cfg.anew => crate::whole::Shown::OriginAnew(&o.name),
                    Some(_) => crate::whole::Shown::Origin,
                    None => crate::whole::Shown::Traced,
                },
            )
        })
        .flatten();
    let functions_shown = functions.is_some();
    let (task_message, partial) = match functions {
        Some((message, partial)) => (message, partial),
        None => (
            cfg.protocol.task_message(ws, &cfg.task, context, layout),
            crate::whole::Partial::default(),
        ),
    };
    let origin_sentence = origin.as_ref().map(|o| o.sentence() + &edge_notes);
    let traced = match (&origin_sentence, functions_shown) {
        (Some(o), true) => o.clone(),
        _ => crate::trace::section(&traced) + origin_sentence.as_deref().unwrap_or_default(),
    };
    // What a file the task names runs on import, where the task is about that
    // ([`crate::onimport`]); how a shell script that reads no options takes the one the
    // task adds ([`crate::shellopt`]); where a shell script splits values at spaces, for a
    // task about spaces ([`crate::wordsplit`]); what the program a document should match
    // prints for `--help` ([`crate::usage::help_note`]).
    let on_import = if cfg.probes && cfg.wording_rules {
        crate::onimport::note(&cfg.task, ws).unwrap_or_default()
            + &crate::shellopt::note(&cfg.task, ws).unwrap_or_default()
            + &crate::wordsplit::note(&cfg.task, ws).unwrap_or_default()
            + &crate::usage::help_note(&cfg.task, ws).unwrap_or_default()
    } else {
        String::new()
    };
    let task_message = crate::probe::insert_after_task(
        &task_message,
        &cfg.task,
        &format!(
            "{}{traced}{on_import}",
            crate::probe::before_section(&shown_before)
        ),
    );
    // Without a check of the user's, the model writes one of what the task states before its
    // first change ([`crate::owncheck`]); kept, it is the session's check from then on.
    let (own_check, asked) =
        if cfg.own_check && cfg.verify.is_none() && cfg.policy.mode != ApprovalMode::Plan {
            let messages = vec![
                models::ChatMessage::new("system", crate::owncheck::SYSTEM),
                models::ChatMessage::new(
                    "user",
                    crate::owncheck::request(&task_message, crate::whole::TURN_BREAK),
                ),
            ];
            crate::owncheck::write(
                engine,
                ws,
                &cfg.task,
                messages,
                &cfg.sampling,
                cfg.stuck_temperature,
            )
            .await
            .map_err(|e| match e {
                crate::owncheck::AskError::Engine(e) => AgentError::Engine(e),
                crate::owncheck::AskError::Generation(e) => AgentError::Generation(e),
            })?
        } else {
            (None, Vec::new())
        };
    let task_message = match &own_check {
        Some(c) => crate::probe::insert_after_task(&task_message, &cfg.task, &c.section()),
        None => task_message,
    };
    let own_cfg;
    let cfg = match &own_check {
        Some(c) => {
            own_cfg = Config {
                verify: Some(c.lang.argv()),
                ..cfg.clone()
            };
            &own_cfg
        }
        None => cfg,
    };
    let tree = act::tree_fingerprint(ws);
    let journal = Journal::create(ws)?;
    let begin = Begin {
        task_message: &task_message,
        tree,
        probes,
        before,
        check_files,
        traced,
        partial,
        origin,
        own_check,
    };
    let mut s = Session::start(engine, ws, cfg, approver, view, journal, begin)?;
    for a in asked {
        let t = a.timings;
        s.tally.tokens += u64::from(t.prompt_tokens) + u64::from(t.generated_tokens);
        s.emit(Event::OwnCheck {
            raw: a.raw,
            verdict: a.verdict.to_owned(),
            check: a.check,
            prompt_tokens: t.prompt_tokens,
            cached_tokens: t.cached_tokens,
            generated_tokens: t.generated_tokens,
        })?;
    }
    let history = cfg.protocol.history(
        cfg.policy.mode,
        cfg.protocol
            .system_prompt(cfg.policy.mode, cfg.prompt_style),
        task_message,
    );
    drive(&mut s, history, 1).await
}

/// `bellows agent --resume ID`: continues session `id` with its history rebuilt from its
/// journal (the task is the journal's; `cfg.task` is ignored) and appends to the same journal.
/// Up to `cfg.max_turns` more turns run, numbered after the journal's last.
pub async fn resume(
    engine: &dyn Engine,
    ws: &Workspace,
    cfg: &Config,
    id: &str,
    approver: &mut dyn Approver,
    view: &mut dyn View,
) -> Result<Outcome, AgentError> {
    let journal = Journal::open(ws, id)?;
    let replay = crate::resume::replay(ws, &journal, cfg)?;
    let mut cfg = cfg.clone();
    cfg.task = replay.task.clone();
    cfg.protocol = replay.protocol;
    // The check the model wrote first stays the session's check, unless the user gives one.
    let own_check = replay.own_check.clone().filter(|_| cfg.verify.is_none());
    if let Some(c) = &own_check {
        cfg.verify = Some(c.lang.argv());
    }
    let cfg = &cfg;
    let task_message = replay.history.task.clone();
    // The tree as the session first started: a DONE after resuming is judged against it.
    let tree = replay
        .start_tree
        .clone()
        .unwrap_or_else(|| act::tree_fingerprint(ws));
    // The tests found at the start, not those the session wrote since.
    let mut probes = session_probes(ws, cfg);
    probes.retain(|p| !(p.found || p.keep) || replay.probes.iter().any(|b| b.command == p.command));
    let begin = Begin {
        task_message: &task_message,
        tree,
        probes,
        before: replay.probes.clone(),
        check_files: replay.check_files.clone(),
        // Not journaled apart: the resumed history's first message holds it.
        traced: String::new(),
        partial: crate::whole::Partial(replay.left_out.clone()),
        // Not journaled: a regressed edge call is told without the variables.
        origin: None,
        own_check,
    };
    let mut s = Session::start(engine, ws, cfg, approver, view, journal, begin)?;
    // Counters too, so a resumed session stalls, loops and spends its budget as the
    // uninterrupted one would have.
    s.tally = replay.tally;
    s.emit(Event::Resume {
        session: s.journal.id.clone(),
        after_turn: replay.last_turn,
    })?;
    drive(&mut s, replay.history, replay.last_turn + 1).await
}

/// The files the session may not change ([`crate::checkfiles`]): those the check runs, the
/// tests the task says fail, and the repository's tests that failed before the session
/// (a test the model could edit until it passes proves nothing).
fn protected_files(
    ws: &Workspace,
    cfg: &Config,
    probes: &[crate::probe::Probe],
    before: &[crate::probe::ProbeRun],
) -> Vec<crate::checkfiles::CheckFile> {
    let mut files = crate::checkfiles::protected(&cfg.task, ws, cfg.verify.as_deref());
    for p in probes.iter().filter(|p| {
        (p.fails && crate::probe::is_test(&p.argv)) || crate::probe::must_pass(p, before)
    }) {
        for f in crate::checkfiles::protected(&cfg.task, ws, Some(&p.argv)) {
            if !files.iter().any(|g| g.path == f.path) {
                files.push(f);
            }
        }
    }
    files
}

/// The commands of the task the session runs ([`crate::probe`]), and without a check the
/// repository's own tests ([`crate::found`]); none when `cfg` says not to.
fn session_probes(ws: &Workspace, cfg: &Config) -> Vec<crate::probe::Probe> {
    if !cfg.probes {
        return Vec::new();
    }
    let mut probes = crate::probe::commands(&cfg.task, ws, cfg.verify.as_deref());
    // Commands read from a kind of task's wording rather than shown by it: a script the
    // task says to run plainly, one it names alone, one its example's stem names.
    if cfg.wording_rules {
        let plain = crate::asks::run_plainly(&cfg.task, ws, &probes);
        probes.extend(plain);
        let alone = crate::targets::scripts_alone(&cfg.task, ws, &probes);
        probes.extend(alone);
        let shown_by = crate::examples::scripts_named_by_stem(&cfg.task, ws, &probes);
        probes.extend(shown_by);
    }
    if cfg.verify.is_none() && cfg.found_tests {
        let found = crate::found::tests(ws, &probes);
        probes.extend(found);
    }
    probes
}

/// The loop, from turn `first` on. Everything else is a small type it calls.
async fn drive(
    s: &mut Session<'_>,
    mut history: History,
    first: u32,
) -> Result<Outcome, AgentError> {
    let (engine, cfg) = (s.engine, s.cfg);
    let budget = prompt_budget(engine, cfg)?;
    for turn in first..first + cfg.max_turns {
        s.turn = turn;
        if cfg.interrupt.fired() {
            return s.stop(StopReason::Quit);
        }
        let rendered = if cfg.restate && !history.turns.is_empty() {
            crate::history::restated(&history, &s.fresh_message()).render(engine, budget)
        } else {
            history.render(engine, budget)
        };
        let Ok(prompt) = rendered else {
            return s.ran_out(StopReason::Budget);
        };
        let sampling = s.tally.sampling(&cfg.sampling, cfg.stuck_temperature, turn);
        s.emit(Event::Prompt {
            turn,
            prompt_tokens: prompt.tokens,
            digested: prompt.digested,
            dropped: prompt.dropped,
            temperature: Some(sampling.temperature),
            seed: sampling.seed,
        })?;
        let (reply, proposals, echoed) = s.generate(prompt.messages, sampling).await?;
        let commits = s.tally.commits;
        let mut checked = false;
        let mut observations: Vec<_> = echoed.into_iter().map(|o| (String::new(), o)).collect();
        for p in &proposals {
            // A reply cut by Ctrl-C is journaled, never acted on.
            if cfg.interrupt.fired() {
                return s.stop(StopReason::Quit);
            }
            if let Some(reason) = s.step(p, &mut observations, &mut checked)? {
                return s.stop(reason);
            }
        }
        // A reply that only writes files back as they are, after the session's change, is
        // the model's answer that its change stands: taken as a DONE (checked like one), as a
        // one-shot harness takes its one reply. Small models rarely write the word.
        if commits > 0
            && s.tally.commits == commits
            && cfg.protocol == prompt::Protocol::Whole
            && cfg.policy.mode != ApprovalMode::Plan
            && crate::whole::copied_back(&observations).is_some()
        {
            let settled = ActionProposal {
                action: Action::Done {
                    summary: crate::whole::SETTLED.to_owned(),
                },
                repairs: Vec::new(),
                format: proposals[0].format,
            };
            if let Some(reason) = s.step(&settled, &mut observations, &mut checked)? {
                return s.stop(reason);
            }
        }
        // The check runs after every turn that changed the repository, as a test suite
        // would, and its result is fed back: failing, its output is the most useful thing the
        // model can read next; passing, the model is asked whether it is finished (a check
        // may cover only part of the task, so only the model's DONE ends the session).
        if cfg.verify.is_some()
            && s.tally.commits > commits
            && !checked
            && let Some(obs) = s.verify(None)?
        {
            observations.push((String::new(), obs));
        }
        // So do the task's own commands: what they print now, beside what they printed.
        if s.tally.commits > commits
            && let Some(obs) = s.probe_after_change()?
        {
            observations.push((String::new(), obs));
        }
        let record = s.record_turn(reply, &observations);
        history.turns.push(record);
        if cfg.interrupt.fired() {
            return s.stop(StopReason::Quit);
        }
        if let Some(reason) = s.tally.check(cfg) {
            return s.ran_out(reason);
        }
    }
    s.ran_out(StopReason::MaxTurns)
}

/// Which DONE rules a pass of [`Session::probe_refusal`] applies: the general ones, or the
/// ones that read a kind of task's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    General,
    Lesser,
}

/// The summary of the DONE a session is judged by when it runs out with its check passing
/// ([`Session::ran_out`]).
pub const RAN_OUT: &str =
    "implied: the session ran out with its change in place and its check passing";

/// Tokens the prompt may take: `n_ctx` less the reply reserve.
fn prompt_budget(engine: &dyn Engine, cfg: &Config) -> Result<usize, AgentError> {
    let n_ctx = engine.info().n_ctx;
    match n_ctx.checked_sub(cfg.reply_reserve) {
        Some(b) if b > 0 => Ok(b as usize),
        _ => Err(AgentError::NoRoom {
            n_ctx,
            reserve: cfg.reply_reserve,
        }),
    }
}

/// Characters the first message's start context may take: [`Config::context_budget`], and
/// never more than half the prompt's room at about three characters a token.
pub(crate) fn context_chars(engine: &dyn Engine, cfg: &Config) -> usize {
    let room = engine.info().n_ctx.saturating_sub(cfg.reply_reserve) as usize;
    let budget = cfg
        .context_budget
        .unwrap_or(cfg.protocol.default_context_budget());
    budget.min(room * 3 / 2)
}

/// What acting on one proposal led to.
enum Step {
    Observed(Observation),
    Finished,
    Quit,
}

impl Session<'_> {
    /// The first message made again from the files as they are now ([`Config::restate`]),
    /// with what the task's commands printed at the start while nothing has changed (after a
    /// change, the last turn's results say what they print now).
    fn fresh_message(&self) -> String {
        let cfg = self.cfg;
        let context = context_chars(self.engine, cfg);
        let message = cfg
            .protocol
            .task_message(self.ws, &cfg.task, context, cfg.layout());
        if act::tree_fingerprint(self.ws) != self.start_tree {
            return message;
        }
        crate::probe::insert_after_task(
            &message,
            &cfg.task,
            &format!(
                "{}{}",
                crate::probe::before_section(&self.before),
                self.traced
            ),
        )
    }

    /// Acts on one proposal and checks a DONE: `Some` stop reason when the session ends,
    /// else its observation is added to `observations` (`checked`: the check has run).
    fn step(
        &mut self,
        p: &ActionProposal,
        observations: &mut Vec<(String, Observation)>,
        checked: &mut bool,
    ) -> Result<Option<StopReason>, AgentError> {
        match self.act(p)? {
            Step::Observed(obs) => observations.push((render(&p.action), obs)),
            Step::Finished if self.cfg.verify.is_none() => return Ok(Some(StopReason::Done)),
            Step::Finished => {
                *checked = true;
                match self.verify(Some(&p.action))? {
                    None if self.own_overruled => return Ok(Some(StopReason::Done)),
                    None => return Ok(Some(StopReason::Verified)),
                    Some(obs) => observations.push((render(&p.action), obs)),
                }
            }
            Step::Quit => return Ok(Some(StopReason::Quit)),
        }
        Ok(None)
    }
}

impl Tally {
    /// Called once per finished turn.
    fn check(&mut self, cfg: &Config) -> Option<StopReason> {
        self.end_turn();
        if self.loop_count() >= cfg.loop_repeats {
            Some(StopReason::Loop)
        } else if self.no_action_turns >= cfg.stall_turns {
            Some(StopReason::Stall)
        } else if cfg.token_budget.is_some_and(|b| self.tokens >= b) {
            Some(StopReason::Budget)
        } else {
            None
        }
    }
}

/// What a session starts from, as its `start` event journals it.
struct Begin<'m> {
    /// The first user message.
    task_message: &'m str,
    /// [`act::tree_fingerprint`] when the session first started.
    tree: String,
    /// The task's commands, and what they printed when the session first started.
    probes: Vec<crate::probe::Probe>,
    before: Vec<crate::probe::ProbeRun>,
    /// The files the check runs, read-only to the session.
    check_files: Vec<crate::checkfiles::CheckFile>,
    /// The functions the wrong commands run ([`crate::trace::section`]).
    traced: String,
    /// The definitions the first message left out of files it showed in part.
    partial: crate::whole::Partial,
    /// Where the task's value first goes wrong ([`crate::origin`]), if the trace showed it.
    origin: Option<crate::origin::Origin>,
    /// The check the model wrote first ([`crate::owncheck`]), run where `verify` would be.
    own_check: Option<crate::owncheck::OwnCheck>,
}

/// Everything the loop's helpers share.
struct Session<'a> {
    engine: &'a dyn Engine,
    ws: &'a Workspace,
    cfg: &'a Config,
    approver: &'a mut dyn Approver,
    view: &'a mut dyn View,
    journal: Journal,
    registry: Arc<Registry>,
    echoes: prompt::Echoes,
    tally: Tally,
    turn: u32,
    /// Decoder failure kinds of the current turn, told to the model when it has no action.
    malformed: Vec<String>,
    /// [`act::tree_fingerprint`] when the session first started: a DONE in a mode that
    /// allows changes is refused while the tree still has it.
    start_tree: String,
    /// The task's commands ([`crate::probe`]) and what they printed at the session's start.
    probes: Vec<crate::probe::Probe>,
    before: Vec<crate::probe::ProbeRun>,
    /// The files the check runs ([`crate::checkfiles`]): never changed by the session.
    check_files: Vec<crate::checkfiles::CheckFile>,
    /// The files the model has seen whole: those the first message shows, and those it READ
    /// since. A whole file written over one it never saw guesses at what it holds.
    seen: BTreeSet<String>,
    /// [`Begin::traced`], shown with the commands' first output while nothing has changed.
    traced: String,
    /// [`Begin::partial`]: definitions never shown, kept as the file has them when a block
    /// writes them ([`crate::splice::keep_unshown`]), until the file is READ.
    partial: crate::whole::Partial,
    /// [`Begin::origin`]: a regressed edge call is told with the function's variables.
    origin: Option<crate::origin::Origin>,
    /// The files the task gives ([`crate::given`]): as they were, at DONE.
    given: Vec<String>,
    /// The files the task names as places of its change ([`crate::named`]): changed, at DONE.
    places: Vec<String>,
    /// [`Begin::own_check`]: the session's check, run on a throwaway copy.
    own_check: Option<crate::owncheck::OwnCheck>,
    /// The tree and the own check's output when it last refused a DONE: a DONE again on the
    /// same tree, failing the same way, is taken (the model's word against its own check's).
    own_refused: Option<(String, String)>,
    /// A DONE was taken over the own check's failure: the session stops `done`, not
    /// `verified`.
    own_overruled: bool,
}

impl<'a> Session<'a> {
    fn start(
        engine: &'a dyn Engine,
        ws: &'a Workspace,
        cfg: &'a Config,
        approver: &'a mut dyn Approver,
        view: &'a mut dyn View,
        journal: Journal,
        begin: Begin<'_>,
    ) -> Result<Session<'a>, AgentError> {
        // What the task gives and where it asks for the change, read from the files as they
        // are before the first turn.
        let (given, places) = if cfg.probes {
            let given = crate::given::files(&cfg.task, ws, &begin.probes);
            let mut skip = given.clone();
            skip.extend(begin.check_files.iter().map(|f| f.path.clone()));
            let places = crate::named::places(&cfg.task, ws, &begin.probes, &skip);
            (given, places)
        } else {
            (Vec::new(), Vec::new())
        };
        let mut s = Session {
            engine,
            ws,
            cfg,
            approver,
            view,
            journal,
            registry: Arc::new(Registry::builtin()),
            echoes: prompt::Echoes::default(),
            tally: Tally::default(),
            turn: 0,
            malformed: Vec::new(),
            start_tree: begin.tree,
            probes: begin.probes,
            before: begin.before,
            check_files: begin.check_files,
            seen: crate::whole::shown_paths(begin.task_message)
                .into_iter()
                .collect(),
            traced: begin.traced,
            partial: begin.partial,
            origin: begin.origin,
            given,
            places,
            own_check: begin.own_check,
            own_refused: None,
            own_overruled: false,
        };
        let info = engine.info();
        s.emit(Event::Start {
            session: s.journal.id.clone(),
            task: cfg.task.clone(),
            mode: format!("{:?}", cfg.policy.mode).to_lowercase(),
            model: info.id.clone(),
            n_ctx: info.n_ctx,
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            task_message: Some(begin.task_message.to_owned()),
            tree_sha256: Some(s.start_tree.clone()),
            protocol: Some(cfg.protocol.as_str().to_owned()),
            probes: s.before.clone(),
            check_files: s.check_files.clone(),
            left_out: s.partial.0.clone(),
        })?;
        Ok(s)
    }

    /// Journals an event, then shows it.
    fn emit(&mut self, event: Event) -> Result<(), AgentError> {
        self.journal.record(&event)?;
        self.view.show(&event);
        Ok(())
    }

    /// The session ends for `reason` (its turns, tokens or patience ran out): where the
    /// repository has changed and its check passes on it now, the change is judged as a
    /// DONE would be ([`RAN_OUT`]: every DONE gate, then the check) and stops as `verified`
    /// when it stands. The 1.5B on backoff-cap wrote the right `min(…)` fix, its check passed,
    /// and it never wrote a bare DONE again (`**DONE**` is prose) before its turns ran out:
    /// the fix was lost with the attempt. A check that fails now is no false success here:
    /// nothing is claimed.
    fn ran_out(&mut self, reason: StopReason) -> Result<Outcome, AgentError> {
        let cfg = self.cfg;
        let judged = cfg.verify.is_some()
            && cfg.policy.mode != ApprovalMode::Plan
            && !cfg.interrupt.fired()
            && act::tree_fingerprint(self.ws) != self.start_tree
            && self.run_check(&cfg.verify.clone().unwrap_or_default()).ok;
        if judged {
            let done = ActionProposal {
                action: Action::Done {
                    summary: RAN_OUT.to_owned(),
                },
                repairs: Vec::new(),
                format: codec::FormatId::Text,
            };
            let (mut observations, mut checked) = (Vec::new(), false);
            let finished = self.tally.renames_finished;
            if self.step(&done, &mut observations, &mut checked)? == Some(StopReason::Verified) {
                return self.stop(StopReason::Verified);
            }
            // The agent finished a rename the session began: judged again on the files so.
            if self.tally.renames_finished > finished
                && self.step(&done, &mut observations, &mut checked)? == Some(StopReason::Verified)
            {
                return self.stop(StopReason::Verified);
            }
        }
        self.stop(reason)
    }

    fn stop(&mut self, reason: StopReason) -> Result<Outcome, AgentError> {
        let t = &self.tally;
        let outcome = Outcome {
            reason,
            session: self.journal.id.clone(),
            turns: self.turn,
            false_successes: t.false_successes,
            echoes: t.echoes,
            premature_done: t.premature_done,
            no_change: t.no_change,
            tokens: t.tokens,
            own_check: self.own_check.clone(),
        };
        self.emit(Event::Stop {
            reason: reason.as_str().to_owned(),
            turns: outcome.turns,
            false_successes: outcome.false_successes,
            echoes: outcome.echoes,
            premature_done: outcome.premature_done,
            tokens: outcome.tokens,
        })?;
        Ok(outcome)
    }

    /// Generates one reply, streaming prose to the view, and halts the engine once the turn's
    /// action limit is reached. Returns the raw reply and its proposals.
    async fn generate(
        &mut self,
        messages: Vec<models::ChatMessage>,
        sampling: models::Sampling,
    ) -> Result<(String, Vec<ActionProposal>, Option<Observation>), AgentError> {
        let turn = self.turn;
        self.malformed.clear();
        let limit = self.cfg.actions_per_turn.max(1);
        let req = GenerateRequest {
            prompt: Prompt::Chat {
                messages,
                tools: self.cfg.protocol.tools(self.cfg.policy.mode),
            },
            sampling,
            max_tokens: Some(self.cfg.reply_reserve),
            stop: Vec::new(),
            grammar: self
                .cfg
                .protocol
                .grammar(self.cfg.policy.mode, self.cfg.grammar),
            logprobs: None,
        };
        let mut generation = self.engine.generate(req).await?;
        self.cfg.interrupt.watch(Arc::clone(&generation.halt));
        let mut decoder =
            TurnDecoder::new(self.cfg.protocol.decoding(), Arc::clone(&self.registry));
        // The whole protocol's replies are decoded once finished: a file block is only known
        // to be one at its closing fence, and its lines are never verbs.
        let whole = self.cfg.protocol == prompt::Protocol::Whole;
        let (mut raw, mut proposals, mut events) = (String::new(), Vec::new(), Vec::new());
        let mut timings = models::Timings::default();
        let mut cut: Option<String> = None;
        let mut hit_limit = false;
        while let Some(ev) = generation.next().await {
            match ev {
                GenEvent::Text { piece, .. } if whole && cut.is_none() => {
                    raw.push_str(&piece);
                    if piece.contains('\n')
                        && let Some(block) = repeating_tail(&raw).or_else(|| repeated_blocks(&raw))
                    {
                        cut = Some(block.to_owned());
                        generation.halt();
                    }
                }
                GenEvent::Text { piece, .. } if proposals.len() < limit && cut.is_none() => {
                    raw.push_str(&piece);
                    decoder.feed_into(&piece, &mut events);
                    self.decoded(&mut events, &mut proposals)?;
                    if proposals.len() >= limit {
                        generation.halt();
                    } else if piece.contains('\n')
                        && let Some(block) = repeating_tail(&raw)
                    {
                        // A small model that repeats a block repeats it until its tokens run
                        // out: stop it here and tell it so.
                        cut = Some(block.to_owned());
                        generation.halt();
                    }
                }
                GenEvent::Text { .. } => {}
                GenEvent::Done { timings: t, reason } => {
                    timings = t;
                    hit_limit = matches!(
                        reason,
                        models::StopReason::MaxTokens | models::StopReason::ContextFull
                    );
                }
                GenEvent::Failed { error, .. } => {
                    self.cfg.interrupt.unwatch();
                    return Err(AgentError::Generation(error));
                }
            }
        }
        self.cfg.interrupt.unwatch();
        if whole {
            // A reply cut for repeating itself ends inside whatever it repeated.
            let d = crate::whole::decode(&raw, hit_limit || cut.is_some(), self.ws, &self.registry);
            for text in d.prose {
                self.view.show(&Event::Prose { turn, text });
            }
            for (kind, raw) in d.failures {
                self.malformed.push(kind.clone());
                self.journal.record(&Event::Malformed { turn, kind, raw })?;
            }
            proposals = d.proposals;
        } else {
            if proposals.len() < limit {
                decoder.finish_into(&mut events);
                self.decoded(&mut events, &mut proposals)?;
            }
            proposals.truncate(limit);
        }
        if let Some(block) = cut {
            // A named failure like the decoder's, so history (live and resumed) tells the
            // model, and the bench counts it.
            self.malformed.push(REPETITION.to_owned());
            self.journal.record(&Event::Malformed {
                turn,
                kind: REPETITION.to_owned(),
                raw: block,
            })?;
        }
        self.tally.tokens += u64::from(timings.prompt_tokens) + u64::from(timings.generated_tokens);
        self.emit(Event::Reply {
            turn,
            raw: raw.clone(),
            prompt_tokens: timings.prompt_tokens,
            cached_tokens: timings.cached_tokens,
            generated_tokens: timings.generated_tokens,
        })?;
        // Help lines the codec left as prose are refused and counted here.
        let echoed = self.echoes.lines_in(&raw);
        let echo = if echoed > 0 && proposals.is_empty() {
            // One record per echoed line, so that the journal's count (which resume and the
            // bench read) is the session's.
            for _ in 0..echoed {
                self.tally.echoes += 1;
                self.emit(Event::Refused {
                    turn,
                    why: "echo".to_owned(),
                })?;
            }
            // Journaled like any observation, so that a resumed session's history has it.
            let obs = echo_observation();
            self.emit(Event::Observation {
                turn,
                ok: obs.ok,
                summary: obs.summary.clone(),
                output: obs.output.clone(),
                hint: obs.hint.clone(),
            })?;
            Some(obs)
        } else {
            None
        };
        Ok((raw, proposals, echo))
    }

    /// Handles decoder events: prose to the view, proposals collected, failures journaled.
    fn decoded(
        &mut self,
        events: &mut Vec<codec::Event>,
        proposals: &mut Vec<ActionProposal>,
    ) -> Result<(), AgentError> {
        let turn = self.turn;
        for e in events.drain(..) {
            match e {
                // Reasoning is shown like prose and never acted on.
                codec::Event::Text(text) | codec::Event::Reasoning(text) => {
                    self.view.show(&Event::Prose { turn, text })
                }
                codec::Event::Proposal { proposal, .. } => proposals.push(proposal),
                codec::Event::Failure { kind, raw, .. } => {
                    let kind = kind.as_str().to_owned();
                    self.malformed.push(kind.clone());
                    self.journal.record(&Event::Malformed { turn, kind, raw })?;
                }
                codec::Event::ToolCallStart { .. } | codec::Event::ArgsDelta { .. } => {}
            }
        }
        Ok(())
    }

    /// One proposal through echo guard → policy → preview → approval → commit.
    fn act(&mut self, p: &ActionProposal) -> Result<Step, AgentError> {
        let turn = self.turn;
        let repairs = p.repairs.iter().map(|r| r.as_str().to_owned()).collect();
        self.emit(Event::Proposal {
            turn,
            action: p.action.to_json(),
            text: render(&p.action),
            repairs,
        })?;
        let action = &p.action;
        if self.echoes.is_echo(action) || self.writes_the_example_file(action) {
            self.tally.echoes += 1;
            self.emit(Event::Refused {
                turn,
                why: "echo".to_owned(),
            })?;
            return self.observed(action, echo_observation(), false);
        }
        // Small models answer DONE without doing anything, or after only reading. Where the
        // mode allows changes, a DONE while the repository is as it was at the start is
        // refused (`no_change`); in plan mode, a DONE before any action succeeded
        // (`premature_done`). Either is counted, is not a stop and not a valid action, so a
        // model that only ever says DONE stalls.
        if matches!(action, Action::Done { .. }) {
            let refusal = if self.cfg.policy.mode == ApprovalMode::Plan {
                (!self.tally.acted).then(|| {
                    self.tally.premature_done += 1;
                    ("premature_done", premature_done_observation())
                })
            } else {
                (act::tree_fingerprint(self.ws) == self.start_tree).then(|| {
                    self.tally.no_change += 1;
                    ("no_change", no_change_observation(self.cfg.protocol))
                })
            };
            // A rename the session began and left undone (what `name_left` and
            // `name_in_prose` would refuse, `named_unchanged` where the task names a file
            // it has left, and `lint` for the imports of a module moved on disk) is finished
            // by the agent, the way those rules judge it, and shown; the DONE waits for the
            // model to look.
            let refusal = match refusal {
                None => self.finish_rename()?.map(|obs| ("rename_finished", obs)),
                some => some,
            };
            // The general rules first: properties of any task's repository, commands and
            // diff. Then the rules that read a particular kind of task's wording
            // ([`Session::lesser_refusal`]).
            let refusal = refusal
                .or_else(|| self.whitespace_refusal())
                .or_else(|| self.lint_refusal())
                .or_else(|| self.copy_refusal())
                // A check a command tampered with first: whatever else is said, it is put
                // back before anything is judged by it.
                .or_else(|| self.check_changed_refusal())
                .or_else(|| self.tests_not_run_refusal())
                .or_else(|| self.option_refusal())
                .or_else(|| self.general_refusal())
                .or_else(|| self.probe_refusal(Tier::General))
                .or_else(|| self.lesser_refusal());
            if let Some((why, obs)) = refusal {
                self.emit(Event::Refused {
                    turn,
                    why: why.to_owned(),
                })?;
                self.witness(why)?;
                return self.observed(action, obs, false);
            }
        }
        self.tally.valid_this_turn += 1;
        let verdict = self.cfg.policy.verdict(action);
        if verdict == Verdict::Refuse {
            self.emit(Event::Refused {
                turn,
                why: "policy".to_owned(),
            })?;
            let mode = format!("{:?}", self.cfg.policy.mode).to_lowercase();
            let offered = self.cfg.policy.mode.tools().join(", ");
            return self.observed(
                action,
                Observation::error(
                    format!("{} is not allowed in {mode} mode", action.name()),
                    Some(&format!("available: {offered}")),
                ),
                true,
            );
        }
        // The whole protocol's replies may hold files the model left as they are (it was
        // shown every file): told as such, not as a failed edit.
        if self.cfg.protocol == prompt::Protocol::Whole
            && let Some(obs) = crate::whole::unchanged(
                self.ws,
                action,
                self.tally.commits > 0,
                crate::asks::verb_asked(&self.cfg.task, self.ws),
            )
        {
            return self.observed(action, obs, true);
        }
        // A file written whole over one the model never saw (not shown, never READ, not
        // written by the session): its content is a guess, so it is refused and the file
        // shown instead, as a READ would (`unseen_file`).
        if let Some(obs) = self.unseen_refusal(action) {
            self.emit(Event::Refused {
                turn,
                why: "unseen_file".to_owned(),
            })?;
            return self.observed(action, obs, true);
        }
        // Definitions the first message left out of a file it showed in part: a block that
        // writes one otherwise than the file has it guesses, so the file's own is kept.
        let kept_own = self.keep_unshown(action);
        let action = kept_own.as_ref().map_or(action, |(a, _)| a);
        // A file written whole without definitions it has, which the task keeps: spliced
        // into the file when the block's definitions each name their place, else refused.
        let mut spliced: Option<(Action, crate::splice::Spliced)> = None;
        if self.cfg.protocol == prompt::Protocol::Whole
            && let Action::Create { path, content } = action
            && let Some(original) = self
                .ws
                .read(path)
                .ok()
                .flatten()
                .and_then(|b| String::from_utf8(b).ok())
        {
            let mut lost = if self.tally.created.contains(path.as_str()) {
                crate::whole::dropped_from_new_file(&original, content, &self.cfg.task)
            } else {
                let mut lost =
                    crate::whole::dropped_definitions(&original, content, &self.cfg.task);
                // A definition the session itself added to the file is its own to take out
                // again: the 1.5B on main-guard moved longest_word into report.py, broke it,
                // and its block with report.py as it was was refused for losing longest_word.
                if let Some(Some(pre)) = self.tally.originals.get(path.as_str()) {
                    let had = crate::whole::definitions(&String::from_utf8_lossy(pre));
                    lost.retain(|name| had.contains(name));
                }
                lost
            };
            // A top-level name the file binds (`NAME = …`) that the block never mentions,
            // where the file had it before the session.
            let pre = self.tally.originals.get(path.as_str());
            for name in crate::whole::dropped_bindings(path, &original, content, &self.cfg.task) {
                let had = match pre {
                    Some(Some(pre)) => {
                        crate::whole::bindings(path, &String::from_utf8_lossy(pre)).contains(&name)
                    }
                    Some(None) => false,
                    None => true,
                };
                if had && !lost.contains(&name) {
                    lost.push(name);
                }
            }
            // Definitions the first message never showed are never the block's to drop,
            // whatever the task's words (notice-wrap's "drops text" allows dropping code).
            for name in crate::whole::unshown_dropped(self.partial.left_out(path), content) {
                if !lost.contains(&name) {
                    lost.push(name);
                }
            }
            // A block that drops definitions, spliced where each names its place; else one
            // that leaves out only the file's closing main lines, which are kept.
            let merged = (!lost.is_empty())
                .then(|| crate::splice::splice(path, &original, content))
                .flatten()
                .filter(|s| {
                    crate::whole::dropped_unnamed(&original, &s.content, &[]).is_empty()
                        && crate::whole::dropped_bindings(path, &original, &s.content, "")
                            .is_empty()
                })
                .or_else(|| {
                    lost.is_empty()
                        .then(|| {
                            crate::splice::keep_main_guard(path, &original, content, &self.cfg.task)
                        })
                        .flatten()
                });
            if let Some(s) = merged {
                if s.content == original {
                    let held = if s.kept_guard {
                        "is the file as it is, less its `if __name__ == \"__main__\":` lines \
                         (kept)"
                            .to_owned()
                    } else {
                        format!("holds {} exactly as the file has it", s.replaced.join(", "))
                    };
                    let obs = Observation::error(
                        format!("{path} not changed: your block {held}"),
                        Some(crate::whole::AFTER_CHANGE),
                    );
                    return self.observed(action, obs, true);
                }
                let whole = Action::Create {
                    path: path.clone(),
                    content: s.content.clone(),
                };
                spliced = Some((whole, s));
            } else if !lost.is_empty() {
                self.emit(Event::Refused {
                    turn,
                    why: "dropped_code".to_owned(),
                })?;
                let obs = crate::whole::dropped_observation(path, &lost);
                return self.observed(action, obs, true);
            }
            // A file written over with none of its lines kept, where the task asks for no
            // rewrite: refused (a spliced block keeps the rest of the file).
            let written = spliced.as_ref().map_or(content, |(_, s)| &s.content);
            if let Some(lines) = crate::whole::replaced_entirely(&original, written, &self.cfg.task)
            {
                self.emit(Event::Refused {
                    turn,
                    why: "replaced_file".to_owned(),
                })?;
                let obs = crate::whole::replaced_observation(path, lines);
                return self.observed(action, obs, true);
            }
        }
        // A directory made where the task names a file: refused before it exists.
        if let Action::Mkdir { path } = action
            && self.cfg.probes
            && crate::asks::names_as_file(&self.cfg.task, path)
        {
            self.emit(Event::Refused {
                turn: self.turn,
                why: "mkdir_file".to_owned(),
            })?;
            let obs = Observation::error(
                format!("{path} is a file the task names; MKDIR would make it a directory"),
                Some(&format!(
                    "to move a file to {path}: MOVE old_path -> {path}; to write it: its path on                      a line by itself, then its content in a fenced code block"
                )),
            );
            return self.observed(action, obs, true);
        }
        let action = spliced.as_ref().map_or(action, |(whole, _)| whole);
        let mut plan = match act::plan(self.ws, action) {
            Ok(plan) => plan,
            Err(obs) => return self.observed(action, obs, true),
        };
        if spliced.is_some()
            && let Plan::Change { repairs, .. } = &mut plan
        {
            repairs.push(crate::splice::PARTIAL_FILE_MERGED);
        }
        // The check's own files stay as they were (or are put back as they were): a
        // passing check then means the code.
        if let Plan::Change { changes, .. } = &plan
            && let Some(path) = changes.iter().find_map(|c| {
                let f = self.check_files.iter().find(|f| f.path == c.path)?;
                (!f.allows(c.post.as_deref())).then_some(&c.path)
            })
        {
            self.tally.check_file_refused += 1;
            self.emit(Event::Refused {
                turn,
                why: "check_file".to_owned(),
            })?;
            let by = self
                .check_files
                .iter()
                .find(|f| &f.path == path)
                .map(|f| f.run_by.clone())
                .filter(|c| !c.is_empty())
                .or_else(|| self.cfg.verify.as_ref().map(|v| v.join(" ")))
                .unwrap_or_default();
            let obs = crate::checkfiles::refusal(path, &by);
            return self.observed(action, obs, true);
        }
        // A Python file written so that a line reads a name nothing binds: refused before it
        // is written, the file kept as it was (`undefined_name`).
        if let Plan::Change { changes, .. } = &plan
            && let Some(obs) = self.undefined_refusal(changes)
        {
            self.emit(Event::Refused {
                turn,
                why: "undefined_name".to_owned(),
            })?;
            return self.observed(action, obs, true);
        }
        // A data file no program reads, written over in a task about a command's output:
        // refused before it is written (`data_unread`).
        if let Plan::Change { changes, .. } = &plan
            && self.cfg.probes
            && let Some(c) = changes.iter().find(|c| {
                c.pre.is_some()
                    && c.post.is_some()
                    && c.pre != c.post
                    && !self.tally.created.contains(c.path.as_str())
                    && crate::inputs::unread_data(
                        &self.cfg.task,
                        self.ws,
                        &c.path,
                        self.probes.iter().any(|p| p.symptom && !p.found),
                    )
            })
        {
            self.emit(Event::Refused {
                turn,
                why: "data_unread".to_owned(),
            })?;
            let obs = crate::inputs::unread_refusal(&c.path);
            return self.observed(action, obs, true);
        }
        // Text the task says the output leaves out stays in the repository: taking it out of
        // the file that holds it is refused (`missing_text_removed`).
        if let Plan::Change { changes, .. } = &plan
            && let Some((text, path)) = self.removed_missing_text(changes)
        {
            self.emit(Event::Refused {
                turn,
                why: "missing_text_removed".to_owned(),
            })?;
            let obs = crate::expect::removed_refusal(&text, &path);
            return self.observed(action, obs, true);
        }
        // A file deleted that the task neither names nor asks to go: refused, nothing lost.
        if let Action::Delete { path } = action
            && self.cfg.probes
            && let Some(why) = crate::asks::delete_unasked(&self.cfg.task, path)
        {
            self.emit(Event::Refused {
                turn: self.turn,
                why: "delete_unasked".to_owned(),
            })?;
            let obs = Observation::error(
                format!("{path} not deleted: {why}"),
                Some("leave the files the task does not name as they are"),
            );
            return self.observed(action, obs, true);
        }
        let shown = match &plan {
            Plan::Observed(obs) => {
                if let Action::Read { path, .. } = action
                    && obs.ok
                {
                    self.seen.insert(path.clone());
                    self.partial.seen(path);
                }
                let obs = match self.cfg.protocol {
                    prompt::Protocol::Text => obs.clone(),
                    prompt::Protocol::Whole | prompt::Protocol::Tools => {
                        crate::whole::read_as_is(self.ws, action, obs)
                    }
                };
                return self.observed(action, obs, true);
            }
            Plan::Done { .. } => return Ok(Step::Finished),
            Plan::Run { argv } => format!("$ {}", quote_argv(argv)),
            Plan::Change { diff, .. } => diff.clone(),
        };
        self.emit(Event::Preview {
            turn,
            shown: shown.clone(),
        })?;
        if verdict == Verdict::Ask {
            let answer = self.approver.approve(action, &shown);
            self.emit(Event::Approval { turn, answer })?;
            match answer {
                Approval::Yes => {}
                Approval::Quit => return Ok(Step::Quit),
                Approval::No => {
                    let obs = Observation::error(
                        "the user declined this action",
                        Some("try another way, or DONE"),
                    );
                    return self.observed(action, obs, true);
                }
            }
        }
        let obs = match plan {
            Plan::Run { argv } => self.run_argv(&argv),
            Plan::Change {
                summary,
                changes,
                dirs,
                repairs,
                diff,
            } => self.commit(summary, &changes, &dirs, &repairs, diff)?,
            Plan::Observed(_) | Plan::Done { .. } => unreachable_plan(),
        };
        let mut obs = obs;
        if let Some((_, s)) = &spliced
            && obs.ok
        {
            obs.summary = format!("{}; {}", obs.summary, crate::splice::describe(s));
        }
        if let Some((_, names)) = &kept_own
            && obs.ok
            && !names.is_empty()
        {
            obs.summary = format!(
                "{}; kept {} as the file has it (not shown to you; READ the file to change it)",
                obs.summary,
                names.join(", ")
            );
        }
        if obs.ok
            && p.repairs
                .contains(&codec::RepairKind::BlockPlacedByDefinitions)
        {
            obs.summary = format!("{}; {}", obs.summary, crate::splice::PLACED);
        }
        self.observed(action, obs, true)
    }

    /// A DONE refused because an option the task adds crashes in a documented command
    /// (`option_crashes`, [`crate::options`]), counted.
    /// [`Session::partial`]: `action` with the definitions of its file that the first
    /// message left out kept as the file has them ([`crate::splice::keep_unshown`]), and the
    /// names of those the block wrote otherwise.
    fn keep_unshown(&self, action: &Action) -> Option<(Action, Vec<String>)> {
        let Action::Create { path, content } = action else {
            return None;
        };
        let names = self.partial.left_out(path)?;
        let original = String::from_utf8(self.ws.read(path).ok()??).ok()?;
        let (content, kept) = crate::splice::keep_unshown(path, &original, content, names)?;
        Some((
            Action::Create {
                path: path.clone(),
                content,
            },
            kept,
        ))
    }

    /// [`Session::seen`]'s refusal: `Some` observation (the file as it is, fenced as the
    /// first message shows files) when the whole protocol writes an existing file the model
    /// has not seen, which is then seen.
    fn unseen_refusal(&mut self, action: &Action) -> Option<Observation> {
        let Action::Create { path, .. } = action else {
            return None;
        };
        // A file the check runs is refused as such, which says more.
        if self.cfg.protocol != prompt::Protocol::Whole
            || self.seen.contains(path)
            || self.tally.changed.contains(path)
            || self.check_files.iter().any(|f| &f.path == path)
        {
            return None;
        }
        let text = String::from_utf8(self.ws.read(path).ok()??).ok()?;
        self.seen.insert(path.clone());
        let obs = Observation::error(
            format!(
                "{path} not written: you had not seen it, so your block could only guess at \
                 what it holds; here it is as it is now"
            ),
            Some(
                "to change it, write it again whole with only your change made; leave it out \
                 if the fix is in another file",
            ),
        );
        Some(obs.with_output(crate::whole::fenced(path, &text)))
    }

    fn option_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if !self.cfg.probes {
            return None;
        }
        let crashed = crate::options::crashing(&self.cfg.task, self.ws);
        if crashed.is_empty() {
            return None;
        }
        self.tally.probe_refused += 1;
        Some(("option_crashes", crate::options::refusal(&crashed)))
    }

    /// A DONE refused because a line the session wrote names the value the task expects
    /// and the data holds (`answer_written`, [`crate::answers`]), counted.
    fn answer_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if !self.cfg.probes {
            return None;
        }
        let written = crate::answers::written(
            &self.cfg.task,
            self.ws,
            &self.tally.changed,
            &self.tally.originals,
        );
        if written.is_empty() {
            return None;
        }
        self.tally.probe_refused += 1;
        Some(("answer_written", crate::answers::refusal(&written)))
    }

    /// [`crate::expect::removed_missing`] for a plan's changes, the rest of the repository
    /// read as it is.
    fn removed_missing_text(&self, changes: &[act::FileChange]) -> Option<(String, String)> {
        if self.probes.is_empty() {
            return None;
        }
        fn text(b: &Option<Vec<u8>>) -> Option<&str> {
            b.as_deref().and_then(|b| std::str::from_utf8(b).ok())
        }
        let listed: Vec<(&str, Option<&str>, Option<&str>)> = changes
            .iter()
            .map(|c| (c.path.as_str(), text(&c.pre), text(&c.post)))
            .collect();
        // Only a change that takes a quoted text out of its files reads the rest.
        crate::expect::removed_missing(&self.cfg.task, &self.probes, &listed, &[])?;
        let others: Vec<String> = self
            .ws
            .files("")
            .unwrap_or_default()
            .into_iter()
            .filter(|f| !changes.iter().any(|c| &c.path == f))
            .filter_map(|f| self.ws.read(&f).ok().flatten())
            .filter_map(|b| String::from_utf8(b).ok())
            .collect();
        crate::expect::removed_missing(&self.cfg.task, &self.probes, &listed, &others)
    }

    /// Why `changes` may not be written: a Python file among them where a line reads a name
    /// nothing binds, which the file bound before the session (or any, in a new file)
    /// ([`crate::undefined`]). The 0.5B on rename-config-key had every rename right and the
    /// check passing, then rewrote health.py's main block around a `path` bound nowhere;
    /// the 1.5B on main-guard moved code into report.py without its `sys`. `None` with the
    /// lint off, and for a file that did not parse before the session.
    fn undefined_refusal(&self, changes: &[act::FileChange]) -> Option<Observation> {
        if !self.cfg.lint {
            return None;
        }
        let found = changes.iter().find_map(|c| {
            let post = std::str::from_utf8(c.post.as_deref()?).ok()?;
            if !c.path.ends_with(".py") || self.tally.lint_exempt.contains(&c.path) {
                return None;
            }
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            let before = match self.tally.originals.get(&c.path) {
                Some(pre) => pre.as_deref().map(text),
                None => c.pre.as_deref().map(text),
            };
            let found = crate::undefined::newly_undefined(&c.path, before.as_deref(), post);
            (!found.is_empty()).then_some(found)
        })?;
        let said: Vec<String> = found
            .iter()
            .map(crate::undefined::Undefined::describe)
            .collect();
        let hint = if found.iter().all(|u| !u.module) {
            VALUE_HINT
        } else {
            UNBOUND_HINT
        };
        Some(Observation::error(
            format!("{} not written: {}", found[0].path, said.join("; ")),
            Some(hint),
        ))
    }

    /// Names the session's Python leaves unbound: `name.attr` uses read from the text
    /// ([`crate::imports::unbound`]) and every other name Python's compiler finds unbound
    /// ([`crate::undefined`]), each once; with whether all are plain values (no import is
    /// what is missing: `config.load(path)` with no `path`).
    fn unbound_names(&self) -> (Vec<(String, String)>, bool) {
        let mut found =
            crate::imports::unbound(self.ws, &self.tally.changed, &self.tally.originals);
        let mut values = found.is_empty();
        for u in crate::undefined::in_changed(self.ws, &self.tally.changed, &self.tally.originals) {
            let said = found
                .iter()
                .any(|(p, why)| *p == u.path && why.contains(&format!(" uses {},", u.name)));
            if !said {
                values &= !u.module;
                found.push((u.path.clone(), u.describe()));
            }
        }
        let values = values && !found.is_empty();
        (found, values)
    }

    /// Finishes the rename the task asks for where the session left it undone
    /// ([`crate::renames::finish`]), as one commit (all files or none; `rename_finished` in
    /// the journal, so undo takes it back): the observation says where, with the diff.
    /// `None` when nothing is left to do, when the approval mode would not write a file
    /// unasked, when a file to change is one the check runs (those stay as they were), or
    /// with the task's rules off (`probes`).
    fn finish_rename(&mut self) -> Result<Option<Observation>, AgentError> {
        // The rules it stands in for (`asks_refusal`'s) are off with the probes.
        if !self.cfg.probes {
            return Ok(None);
        }
        let task = &self.cfg.task;
        let names = crate::renames::finish(task, self.ws, &self.tally.originals);
        let moves: Vec<_> = crate::imports::finish_moves(task, self.ws)
            .into_iter()
            .filter(|m| names.iter().all(|n| n.path != m.path))
            .collect();
        let unasked = |f: &crate::renames::Finished| {
            self.cfg.policy.verdict(&Action::Create {
                path: f.path.clone(),
                content: String::new(),
            }) == Verdict::Allow
                && self
                    .check_files
                    .iter()
                    .filter(|c| c.path == f.path)
                    .all(|c| c.allows(Some(f.after.as_bytes())))
        };
        let finished: Vec<crate::renames::Finished> = names.iter().chain(&moves).cloned().collect();
        if finished.is_empty() || !finished.iter().all(unasked) {
            return Ok(None);
        }
        let lines = |ns: &[usize]| {
            let ns: Vec<String> = ns.iter().map(ToString::to_string).collect();
            format!(
                "{} {}",
                if ns.len() == 1 { "line" } else { "lines" },
                ns.join(", ")
            )
        };
        let listed = |fs: &[crate::renames::Finished],
                      which: fn(&crate::renames::Finished) -> &[usize]| {
            fs.iter()
                .filter(|f| !which(f).is_empty())
                .map(|f| format!("{} {}", f.path, lines(which(f))))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut said = Vec::new();
        if let Some((old, new)) = crate::renames::asked(task).filter(|_| !names.is_empty()) {
            let renamed = listed(&names, |f| &f.renamed);
            let restored = listed(&names, |f| &f.restored);
            let mut parts = Vec::new();
            if !renamed.is_empty() {
                parts.push(format!(
                    "{old} still stood as a name in {renamed}: renamed to {new} there"
                ));
            }
            if !restored.is_empty() {
                parts.push(format!(
                    "your rename had reached the word {old} in text the program prints \
                     ({restored}): put back, the name kept renamed"
                ));
            }
            said.push(format!(
                "the task renames {old} to {new}, and the agent finished the rename — {}",
                parts.join("; ")
            ));
        }
        if !moves.is_empty() {
            let pairs: Vec<String> = crate::asks::renames(task, self.ws)
                .into_iter()
                .map(|(from, to)| format!("{from} to {to}"))
                .collect();
            said.push(format!(
                "the task moves {}, and imports of the old module were left: the agent wrote \
                 them for the new one in {}",
                pairs.join(" and "),
                listed(&moves, |f| &f.renamed)
            ));
        }
        let summary = format!("DONE held: {}", said.join("; "));
        let mut changes = Vec::new();
        let mut diff = String::new();
        for f in &finished {
            diff.push_str(&crate::diff::unified(
                &f.path,
                Some(&f.before),
                Some(&f.after),
            ));
            changes.push(act::FileChange {
                path: f.path.clone(),
                pre: Some(f.before.clone().into_bytes()),
                post: Some(f.after.clone().into_bytes()),
                pre_mode: self.ws.mode(&f.path),
                post_mode: None,
            });
        }
        let mut obs = self.commit(summary, &changes, &[], &[RENAME_FINISHED], diff)?;
        if obs.ok {
            self.tally.renames_finished += 1;
            obs.hint = Some(
                "look over the change below; if the task is finished, reply DONE; if not, go on"
                    .to_owned(),
            );
        }
        Ok(Some(obs))
    }

    /// A DONE refused because a file the session wrote does not parse (`lint`), counted.
    /// Also when a Python import the session broke stands ([`crate::imports`]).
    fn lint_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if !self.cfg.lint {
            return None;
        }
        let broken = self.tally.lint(self.ws);
        let mut imports = crate::imports::broken(self.ws, &self.tally.changed);
        let (unbound, values) = self.unbound_names();
        let only_unbound = imports.is_empty() && !unbound.is_empty();
        imports.extend(unbound);
        let why = match (broken.is_empty(), imports.is_empty()) {
            (true, true) => return None,
            (false, true) => crate::lint::describe(&broken),
            (true, false) => crate::imports::describe(&imports),
            (false, false) => format!(
                "{}\n{}",
                crate::lint::describe(&broken),
                crate::imports::describe(&imports)
            ),
        };
        self.tally.lint_refused += 1;
        let hint = match (broken.is_empty(), only_unbound) {
            (false, _) => LINT_HINT,
            (true, true) if values => VALUE_HINT,
            (true, true) => UNBOUND_HINT,
            (true, false) => IMPORTS_HINT,
        };
        let mut obs = Observation::error(format!("DONE refused: {why}"), Some(hint));
        obs.summary = obs.summary.replace('\n', "; ");
        Some(("lint", obs))
    }

    /// A new file at the whole protocol's example path (`colors.py`) that the repository does
    /// not have and the task does not name: the example's file with other content, which the
    /// 0.5B used as a scratch file (a constant the task asked to extract, a copy of the file
    /// it was to change). Refused as an echo.
    fn writes_the_example_file(&self, action: &Action) -> bool {
        let example = codec::registry::WHOLE_EXAMPLE_PATH;
        matches!(action, Action::Create { path, .. } if path == example)
            && self.cfg.protocol == prompt::Protocol::Whole
            && !self.cfg.task.contains(example)
            && self
                .ws
                .resolve_nofollow(example)
                .ok()
                .is_none_or(|p| std::fs::symlink_metadata(p).is_err())
    }

    /// A DONE refused while what the task's words ask for is not so ([`crate::asks`]): a file
    /// it deletes still there (`file_left`), one it creates missing (`file_missing`), a rename
    /// it asks for not done (`rename_incomplete`), a function it deletes still defined
    /// (`definition_left`), the text it gives a file not in it
    /// (`content_missing`), a function or option it adds in no changed file
    /// (`name_missing`), a value it gives a file not in it (`literal_missing`) or not passed
    /// by that file's calls of the function it gives a parameter (`value_not_passed`), a file it
    /// says to update left as it was (`object_unchanged`), a document whose options are not
    /// its program's (`usage_mismatch`, [`crate::usage`]), only files it does not name changed
    /// (`named_unchanged`, [`crate::targets`]), or a line it removes still there
    /// (`removal_left`). Counted; off with the probes.
    fn asks_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if !self.cfg.probes {
            return None;
        }
        let (task, ws) = (&self.cfg.task, self.ws);
        let changed: Vec<String> = self.tally.changed.iter().cloned().collect();
        // The file with one line as it should read, where the refusal knows that line whole:
        // shown after the refusal, since the 1.5B, told the line, wrote back the file as the
        // message showed it (rename-config-key, session 23).
        let mut shown: Option<String> = None;
        let (why, summary, hint) = if let Some(f) = crate::asks::files_to_delete(task, ws).first() {
            (
                "file_left",
                format!("the task says to delete {f}, and it is still there"),
                format!("reply DELETE {f} on a line of its own"),
            )
        } else if let Some(f) = crate::asks::files_to_create(task, ws).first() {
            (
                "file_missing",
                format!("the task says to create {f}, and it is not there"),
                format!(
                    "write {f}: its path on a line by itself, then its content in a fenced code block"
                ),
            )
        } else if let Some((from, to)) = crate::asks::rename_left(task, ws) {
            (
                "rename_incomplete",
                format!(
                    "the task renames {from} to {to}, and {from} is still there or {to} is not"
                ),
                format!(
                    "reply MOVE {from} -> {to} on a line of its own (it keeps the content), \
                     then fix what imports it"
                ),
            )
        } else if let Some((name, file)) = crate::asks::definition_left(task, ws) {
            (
                "definition_left",
                format!("the task says to delete {name}, and {file} still defines it"),
                format!(
                    "write {file} without {name}: its path on a line by itself, then its \
                     complete new content, everything else kept, in a fenced code block"
                ),
            )
        } else if let Some((file, text, named)) = crate::asks::content_missing(task, ws) {
            let target = named.first().cloned().unwrap_or(file);
            (
                "content_missing",
                format!("the task says {target} holds \"{text}\", and it does not"),
                format!(
                    "write {target}: its path on a line by itself, then its complete content, \
                     with that text, in a fenced code block"
                ),
            )
        } else if let Some(name) = crate::asks::names_missing(task, ws, &changed).first() {
            let getopts = crate::asks::getopts_without(ws, &changed, name);
            if let Some((file, line, _, fixed)) = &getopts {
                shown = with_line(ws, file, *line, fixed);
            }
            (
                "name_missing",
                match &getopts {
                    Some((file, line, text, fixed)) => format!(
                        "the task asks you to add the option {name}, and no file you changed \
                         reads it from the command line: {file} line {line} `{text}` gives \
                         getopts its option letters in one word, without {}; with it, the \
                         line reads `{fixed}`",
                        name.trim_start_matches('-')
                    ),
                    None if name.starts_with('-') => format!(
                        "the task asks you to add the option {name}, and no file you changed \
                         reads it from the command line"
                    ),
                    None => {
                        format!("the task asks you to add {name}, and no file you changed has it")
                    }
                },
                if let Some((file, line, _, fixed)) = &getopts {
                    format!(
                        "write {file} with line {line} as `{fixed}`, keeping everything else in \
                         the file: its path on a line by itself, then its complete new content in \
                         a fenced code block"
                    )
                } else if name.starts_with('-') {
                    format!(
                        "make the program the task names accept {name} where it reads its \
                         options (its getopts letters and case patterns, or its argument \
                         parser) and act on it, keeping everything else in the file, then DONE"
                    )
                } else {
                    format!(
                        "add {name} where the task says, keeping everything else in the file, \
                         then DONE"
                    )
                },
            )
        } else if let Some(np) = crate::targets::value_not_passed(task, ws) {
            let (file, function, text) = (&np.file, &np.function, &np.text);
            (
                "value_not_passed",
                format!(
                    "the task says {file} passes \"{text}\" to {function}, and {file} calls \
                     `{}` without it",
                    np.call
                ),
                format!(
                    "write {file} so that its calls of {function} pass \"{text}\" themselves: \
                     its path on a line by itself, then its complete new content in a fenced \
                     code block"
                ),
            )
        } else if let Some(lit) = crate::targets::literal_missing(task, ws) {
            let text = &lit.text;
            let (summary, hint) = match lit.files.as_slice() {
                [] => (
                    format!("the task gives the code \"{text}\", and no file of code has it"),
                    format!("put \"{text}\" where the task says, then DONE"),
                ),
                files => {
                    let files = files.join(" or ");
                    (
                        format!("the task gives {files} \"{text}\", and {files} does not have it"),
                        format!(
                            "write {files} with \"{text}\" where the task says: its path on a \
                             line by itself, then its complete new content in a fenced code block"
                        ),
                    )
                }
            };
            ("literal_missing", summary, hint)
        } else if let Some(file) = crate::targets::object_unchanged(task, ws, &changed) {
            (
                "object_unchanged",
                format!("the task says to change {file}, and you have not changed it"),
                format!(
                    "write {file} with the change the task asks: its path on a line by itself, \
                     then its complete new content in a fenced code block"
                ),
            )
        } else if let Some(m) = crate::usage::mismatch(task, ws) {
            let doc = m.doc().to_owned();
            (
                "usage_mismatch",
                m.summary(),
                format!(
                    "read the program's options in its source, then write {doc}: its path on a \
                     line by itself, then its complete new content in a fenced code block"
                ),
            )
        } else if let Some((named, others)) = crate::targets::named_unchanged(
            task,
            ws,
            (
                &crate::record::substantive(&self.tally, ws, task),
                &self.tally.created.iter().cloned().collect::<Vec<_>>(),
            ),
            &self.probes,
        ) {
            (
                "named_unchanged",
                format!(
                    "the task names {}, which you left as it was; you changed {}",
                    named.join(", "),
                    others.join(", ")
                ),
                format!(
                    "make the change the task asks in {}: its path on a line by itself, then \
                     its complete new content in a fenced code block",
                    named.join(" or ")
                ),
            )
        } else if let Some((file, line, text)) = crate::renames::left(task, ws).first().cloned() {
            let (old, new) = crate::renames::asked(task).unwrap_or_default();
            (
                "name_left",
                format!(
                    "the task renames {old} to {new}, and {file} still uses {old} (line {line}: \
                     `{text}`)"
                ),
                format!(
                    "write {file} with {old} renamed to {new}: its path on a line by itself, \
                     then its complete new content in a fenced code block"
                ),
            )
        } else if let Some((file, line, _, fixed)) =
            crate::renames::in_prose(task, ws, &self.tally.originals)
        {
            let (old, new) = crate::renames::asked(task).unwrap_or_default();
            shown = with_line(ws, &file, line, &fixed);
            (
                "name_in_prose",
                // The line as it is now is not quoted: the 1.5B wrote it back from the
                // refusal, turn after turn, with the file as it should be shown below.
                format!(
                    "the task renames the name {old}, and you also renamed the word {old} in \
                     text {file} prints, on line {line}; with the word kept and the name \
                     renamed, line {line} reads `{fixed}`"
                ),
                format!(
                    "write {file} with line {line} as `{fixed}` ({new} only where the code uses \
                     the name, the word {old} kept in the text): its path on a line by itself, \
                     then its complete new content in a fenced code block"
                ),
            )
        } else if let Some((summary, hint)) = {
            let inputs = crate::inputs::only_inputs_changed(
                task,
                ws,
                &self.tally.modified(ws),
                &self.tally.created.iter().cloned().collect::<Vec<_>>(),
                !self.probes.is_empty(),
            );
            (!inputs.is_empty()).then(|| crate::inputs::refusal(&inputs))
        } {
            ("input_edited", summary, hint)
        } else if let Some(left) =
            crate::targets::removal_left(task, ws, &changed, &self.tally.originals)
        {
            let file = &left.file;
            (
                "removal_left",
                format!(
                    "the task says to remove the {} from {file}, and {file} still has `{}`",
                    left.what, left.line
                ),
                format!(
                    "write {file} without that line: its path on a line by itself, then its \
                     complete new content, everything else kept, in a fenced code block"
                ),
            )
        } else {
            return None;
        };
        self.tally.file_left_refused += 1;
        let obs = Observation::error(format!("DONE refused: {summary}"), Some(&hint));
        Some((
            why,
            match shown {
                Some(text) => obs.with_output(text),
                None => obs,
            },
        ))
    }

    /// A DONE refused because the task asks to move or rename and a file the session created
    /// is an exact copy of one still in place (`copy_left`), counted.
    fn copy_refusal(&mut self) -> Option<(&'static str, Observation)> {
        let task = self.cfg.task.to_lowercase();
        let moving = task
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| matches!(w, "move" | "moved" | "rename" | "renamed"));
        if !moving {
            return None;
        }
        let copies = self.tally.copies(self.ws);
        if copies.is_empty() {
            return None;
        }
        self.tally.copy_refused += 1;
        Some((
            "copy_left",
            Observation::error(
                format!("DONE refused: {}", describe_copies(&copies)),
                Some(&copy_hint(&copies)),
            ),
        ))
    }

    /// A DONE refused because every change the session made is whitespace alone
    /// ([`crate::record::whitespace_only`]): `whitespace_only`; or, for a spelling fix,
    /// letter case (and whitespace) alone ([`crate::record::case_only`]): `case_only`. Each
    /// counted as no change.
    fn whitespace_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if self.cfg.policy.mode == ApprovalMode::Plan {
            return None;
        }
        if let Some(files) = crate::record::case_only(&self.tally, self.ws, &self.cfg.task)
            && crate::record::whitespace_only(&self.tally, self.ws, &self.cfg.task).is_none()
        {
            self.tally.no_change += 1;
            return Some((
                "case_only",
                Observation::error(
                    format!(
                        "DONE refused: your changes to {} only turn letters to capitals or \
                         small letters; a spelling mistake is a wrong, missing or extra \
                         letter, and it is still there",
                        files.join(", ")
                    ),
                    Some(
                        "find the misspelled word, then write the file with that word spelled \
                         right and everything else as it was, then DONE",
                    ),
                ),
            ));
        }
        let files = crate::record::whitespace_only(&self.tally, self.ws, &self.cfg.task)?;
        self.tally.no_change += 1;
        Some((
            "whitespace_only",
            Observation::error(
                format!(
                    "DONE refused: your changes to {} only add or remove blank lines or \
                     spaces; the task asks for a change of the text itself",
                    files.join(", ")
                ),
                Some(
                    "find the words or code the task is about and write the file with them \
                     changed, then DONE",
                ),
            ),
        ))
    }

    /// A DONE refused because the check, or a command of the task, runs a Python test
    /// script in which nothing can fail ([`crate::found::checks_nothing`]: `checks_nothing`)
    /// or that runs none of the tests it defines ([`crate::found::runs_no_tests`]:
    /// `tests_not_run`), counted.
    fn tests_not_run_refusal(&mut self) -> Option<(&'static str, Observation)> {
        let runs: Vec<&Vec<String>> = self
            .cfg
            .verify
            .iter()
            .chain(self.probes.iter().map(|p| &p.argv))
            .collect();
        if let Some(file) = runs
            .iter()
            .find_map(|argv| crate::found::checks_nothing(self.ws, argv))
        {
            self.tally.check_file_refused += 1;
            return Some((
                "checks_nothing",
                Observation::error(
                    format!(
                        "DONE refused: nothing in {file} can fail (no assert, no raise), so \
                         `python3 {file}` passes whatever the code does"
                    ),
                    Some(&format!(
                        "write {file} again: import the function from its module and assert \
                         what it returns for a few inputs, then DONE"
                    )),
                ),
            ));
        }
        let file = self
            .cfg
            .verify
            .iter()
            .chain(self.probes.iter().map(|p| &p.argv))
            .find_map(|argv| crate::found::runs_no_tests(self.ws, argv))?;
        self.tally.check_file_refused += 1;
        Some((
            "tests_not_run",
            Observation::error(
                format!(
                    "DONE refused: {file} defines tests, and `python3 {file}` runs none of them \
                     (a script runs only what it calls), so it passes whatever the code does"
                ),
                Some(&format!(
                    "write {file} again ending with `if __name__ == \"__main__\":` and \
                     `unittest.main()` under it (or call each test function at the end), then DONE"
                )),
            ),
        ))
    }

    /// A DONE refused because a command left a file the check runs changed
    /// (`check_changed`), counted.
    fn check_changed_refusal(&mut self) -> Option<(&'static str, Observation)> {
        let changed = crate::checkfiles::changed(self.ws, &self.check_files);
        let first = changed.first()?;
        self.tally.check_file_refused += 1;
        Some((
            "check_changed",
            Observation::error(
                format!(
                    "DONE refused: {} is not as it was, and the check runs it; the check only \
                     counts with the test as the task gave it",
                    first.path
                ),
                Some("put the test back as it was, and change the code it tests instead"),
            ),
        ))
    }

    /// The general DONE rules of the task's files ([`crate::given`], [`crate::named`]): a
    /// file the task gives was changed (`given_changed`), a file it names as the place of a
    /// change was left (`named_left`), or it asks for tests and none was added
    /// (`tests_not_added`).
    fn general_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if !self.cfg.probes {
            return None;
        }
        let changed: Vec<String> = self.tally.changed.iter().cloned().collect();
        let edited: Vec<(String, Option<Vec<u8>>)> = self
            .given
            .iter()
            .filter(|g| changed.contains(g))
            .filter_map(|g| {
                let before = match self.tally.originals.get(g) {
                    Some(Some(b)) => Some(b.clone()),
                    Some(None) => return None,
                    None => None,
                };
                let now = self.ws.read(g).ok().flatten();
                (before.is_none() || now != before).then(|| (g.clone(), before))
            })
            .collect();
        if !edited.is_empty() {
            let refs: Vec<&(String, Option<Vec<u8>>)> = edited.iter().collect();
            return Some(("given_changed", crate::given::refusal(&refs)));
        }
        let left = crate::named::left(self.ws, &self.places, &changed, &self.tally.originals);
        if !left.is_empty() && !changed.is_empty() {
            return Some(("named_left", crate::named::refusal(&left)));
        }
        if let Some(counts) =
            crate::named::tests_not_added(&self.cfg.task, self.ws, &changed, &self.tally.originals)
        {
            return Some(("tests_not_added", crate::named::tests_refusal(counts)));
        }
        None
    }

    /// The rules that read one kind of task's wording (what it asks to delete, rename,
    /// remove or print; [`crate::asks`], [`crate::answers`], the lesser probe rules), run
    /// only once every general rule passed. A passing check does not silence them: on the
    /// development suite's harder half, letting a passing check overrule them gave two false
    /// successes in twelve tasks (book-year-field, latest-release-sh: checks weaker than the
    /// task), and on the frozen suite it changed no result (benches/README.md).
    fn lesser_refusal(&mut self) -> Option<(&'static str, Observation)> {
        if !self.cfg.wording_rules {
            return None;
        }
        self.asks_refusal()
            .or_else(|| self.answer_refusal())
            .or_else(|| self.probe_refusal(Tier::Lesser))
    }

    /// A DONE refused because every command the task calls wrong still prints what it
    /// printed before the session changed anything (`unchanged_output`), because a test that
    /// passed before fails now (`test_broken`), because one now crashes on broken code
    /// (`now_broken`), because one it says fails still fails
    /// (`still_failing`), because one does not print what the task says it prints
    /// (`expected_output`, [`crate::expect`]), because one still prints what the task calls stray
    /// (`stray_output`), because a command without the option the task adds prints
    /// otherwise than before (`default_changed`), because the failing command run on another
    /// file prints otherwise than before (`regressed`), or because a script the task names
    /// prints nothing now (`output_lost`), counted.
    fn probe_refusal(&mut self, tier: Tier) -> Option<(&'static str, Observation)> {
        if self.before.is_empty() {
            return None;
        }
        let now = crate::probe::run_all(self.ws, &self.probes);
        if tier == Tier::Lesser {
            return self.probe_lesser(&now);
        }
        if let Some(same) = crate::probe::unchanged_symptoms(&self.probes, &self.before, &now) {
            self.tally.probe_refused += 1;
            return Some(("unchanged_output", crate::probe::refusal(&same)));
        }
        let broken = crate::found::broken(&self.probes, &self.before, &now);
        if !broken.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("test_broken", crate::found::broken_refusal(&broken)));
        }
        let crashed = crate::probe::now_broken(&self.probes, &self.before, &now, &self.cfg.task);
        if !crashed.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("now_broken", crate::probe::broken_code_refusal(&crashed)));
        }
        let failing = crate::probe::still_failing(&self.probes, &self.before, &now);
        if !failing.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("still_failing", crate::probe::failing_refusal(&failing)));
        }
        let unmet = crate::expect::unmet(&self.cfg.task, &self.probes, &now);
        if !unmet.is_empty() {
            self.tally.probe_refused += 1;
            let mut obs = crate::expect::refusal(&unmet);
            // Where the option the task adds is tested after the argument was read.
            if let Some(why) = crate::shellopt::read_before_test(&self.cfg.task, self.ws) {
                obs.summary = format!("{}. {why}", obs.summary);
            }
            return Some(("expected_output", obs));
        }
        let regressed = crate::probe::regressed(&self.probes, &self.before, &now);
        if !regressed.is_empty() {
            self.tally.probe_refused += 1;
            let mut obs = crate::probe::regressed_refusal(&regressed);
            if let Some(o) = &self.origin {
                let commands: Vec<&str> =
                    regressed.iter().map(|(_, n)| n.command.as_str()).collect();
                let held = crate::origin::edge_variables(self.ws, &self.cfg.task, o, &commands);
                if !held.is_empty() {
                    obs.output = format!("{}\n{}", obs.output, held.trim_end());
                }
            }
            return Some(("regressed", obs));
        }
        None
    }

    /// The probe rules that read what a kind of task says a command prints (values, an
    /// order, an example, stray lines, a default kept, a script's output kept).
    fn probe_lesser(
        &mut self,
        now: &[crate::probe::ProbeRun],
    ) -> Option<(&'static str, Observation)> {
        let now = now.to_vec();
        let missing =
            crate::expect::still_missing(&self.cfg.task, &self.probes, &self.before, &now);
        if !missing.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("output_missing", crate::expect::missing_refusal(&missing)));
        }
        let wrong = crate::expect::still_wrong(&self.cfg.task, &self.probes, &self.before, &now);
        if !wrong.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("wrong_value_left", crate::expect::wrong_refusal(&wrong)));
        }
        let right = crate::expect::right_missing(&self.cfg.task, &self.probes, &self.before, &now);
        if !right.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("right_value_missing", crate::expect::right_refusal(&right)));
        }
        let grown = crate::expect::lines_added(&self.cfg.task, &self.probes, &self.before, &now);
        if !grown.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("value_lines_added", crate::expect::lines_refusal(&grown)));
        }
        let misordered =
            crate::order::still_misordered(&self.cfg.task, &self.probes, &self.before, &now);
        if !misordered.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("order_unchanged", crate::order::refusal(&misordered)));
        }
        if !crate::examples::examples(&self.cfg.task).is_empty() {
            // What the repository holds now and what the files the session changed held
            // before it: an example the data promised stays promised when the session takes
            // its words out of the data (the 0.5B on book-year-field wrote Dune's year 1965
            // as 0, and the example looked like an illustration).
            let mut files: Vec<String> = self
                .ws
                .files("")
                .unwrap_or_default()
                .iter()
                .filter_map(|f| self.ws.read(f).ok().flatten())
                .filter_map(|b| String::from_utf8(b).ok())
                .collect();
            files.extend(
                self.tally
                    .originals
                    .values()
                    .flatten()
                    .filter_map(|b| String::from_utf8(b.clone()).ok()),
            );
            let unshown =
                crate::examples::unshown(&self.cfg.task, &files, &self.probes, &self.before, &now);
            if !unshown.is_empty() {
                self.tally.probe_refused += 1;
                return Some(("example_missing", crate::examples::refusal(&unshown)));
            }
        }
        let unsorted = crate::order::unsorted_dates(&self.cfg.task, &self.probes, &now);
        if !unsorted.is_empty() {
            self.tally.probe_refused += 1;
            return Some((
                "order_unsorted",
                crate::order::unsorted_refusal(&unsorted, &self.cfg.task),
            ));
        }
        let stray = crate::probe::stray_printed(&self.probes, &self.before, &now);
        if !stray.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("stray_output", crate::probe::stray_refusal(&stray)));
        }
        let changed = crate::probe::defaults_changed(&self.probes, &self.before, &now);
        if !changed.is_empty() {
            self.tally.probe_refused += 1;
            return Some(("default_changed", crate::probe::default_refusal(&changed)));
        }
        let lost = crate::targets::output_lost(&self.cfg.task, &self.probes, &self.before, &now);
        if lost.is_empty() {
            return None;
        }
        self.tally.probe_refused += 1;
        Some(("output_lost", crate::targets::output_lost_refusal(&lost)))
    }

    /// After a turn that changed files: the task's commands run again, told beside what they
    /// printed before (journaled like any observation). `None` when the task names none.
    fn probe_after_change(&mut self) -> Result<Option<Observation>, AgentError> {
        if self.probes.is_empty() {
            return Ok(None);
        }
        let now = crate::probe::run_all(self.ws, &self.probes);
        if now.is_empty() {
            return Ok(None);
        }
        let mut obs = crate::probe::after_change(&self.probes, &self.before, &now, &self.cfg.task);
        let broken = crate::found::broken(&self.probes, &self.before, &now);
        let lost = crate::targets::output_lost(&self.cfg.task, &self.probes, &self.before, &now);
        if !broken.is_empty() {
            obs.ok = false;
            obs.hint = Some(format!(
                "{} passed before your change and fails now: fix what your change broke",
                crate::probe::command_names(&broken)
            ));
        } else if obs.ok && !lost.is_empty() {
            let names: Vec<&crate::probe::ProbeRun> = lost.iter().map(|(_, n)| *n).collect();
            obs.ok = false;
            obs.hint = Some(format!(
                "{} printed something before your change and prints nothing now: keep what it \
                 does when it is run directly",
                crate::probe::command_names(&names)
            ));
        }
        if let Some(hint) = crate::explain::missing_args_hint(
            &obs.output,
            self.ws,
            &self.tally.changed,
            &self.tally.originals,
        ) {
            obs.hint = Some(hint);
        }
        self.journal_observation(&obs)?;
        Ok(Some(obs))
    }

    /// Journals an observation no action produced (a check's, a probe's), so that a resumed
    /// session's history has it.
    fn journal_observation(&mut self, obs: &Observation) -> Result<(), AgentError> {
        self.emit(Event::Observation {
            turn: self.turn,
            ok: obs.ok,
            summary: obs.summary.clone(),
            output: crate::observe::redact(&obs.output),
            hint: obs.hint.clone(),
        })
    }

    fn observed(
        &mut self,
        action: &Action,
        obs: Observation,
        valid: bool,
    ) -> Result<Step, AgentError> {
        let output = crate::observe::redact(&obs.output);
        let mut obs = obs;
        if valid {
            let key = loop_key(&render(action), obs.ok, &obs.summary, &output);
            let same_action = self.tally.last.as_ref() == Some(&key);
            if same_action {
                obs.hint = Some(repeat_hint(action, self.cfg.protocol));
            }
            self.tally.saw(key);
            if !same_action && self.tally.completes_repeated_turn() {
                obs.hint = Some(repeat_turn_hint(self.cfg.protocol).to_owned());
            }
            self.tally.acted |= obs.ok;
            self.tally.progress_this_turn |= obs.ok;
        }
        self.emit(Event::Observation {
            turn: self.turn,
            ok: obs.ok,
            summary: obs.summary.clone(),
            output,
            hint: obs.hint.clone(),
        })?;
        Ok(Step::Observed(obs))
    }

    /// Runs the check: `argv` in the repository, or the model's own check
    /// ([`crate::owncheck`]) on a throwaway copy of it.
    fn run_check(&self, argv: &[String]) -> Observation {
        let Some(c) = &self.own_check else {
            return self.run_argv(argv);
        };
        match crate::owncheck::run(self.ws, c.lang, &c.script) {
            Some(r) => Observation {
                ok: r.code == Some(0) && !r.timed_out,
                summary: r.status(),
                output: r.output,
                hint: None,
            },
            None => Observation {
                ok: false,
                summary: "the repository could not be copied to run the check".to_owned(),
                output: String::new(),
                hint: None,
            },
        }
    }

    fn run_argv(&self, argv: &[String]) -> Observation {
        let interrupt = &self.cfg.interrupt;
        let out = match self.ws.run_until(argv, &|| interrupt.fired()) {
            Err(e) => return e.into(),
            Ok(out) => out,
        };
        let mut obs = if out.timed_out {
            Observation {
                ok: false,
                summary: format!(
                    "timed out after {}s and was killed",
                    self.ws.run_timeout.as_secs_f32()
                ),
                output: out.output,
                hint: Some("run something faster, or narrow the command".to_owned()),
            }
        } else {
            let ok = out.code == Some(0);
            let mut summary = match out.code {
                Some(c) => format!("exit code {c}"),
                None => "ended by a signal".to_owned(),
            };
            if out.output.trim().is_empty() {
                summary.push_str(", no output");
            }
            Observation {
                ok,
                summary,
                output: out.output,
                hint: (!ok).then(|| {
                    "the command failed: read its output, fix the cause, then RUN it again"
                        .to_owned()
                }),
            }
        };
        // A process started in the background (a server, a daemon) did not outlive the
        // command: the model must not count on it in its next command.
        if out.left_running {
            obs.summary = format!(
                "{}; what it left running in the background ended with it (a command's \
                 processes end when it does)",
                obs.summary
            );
        }
        // A command that rewrote git's hooks or config did something git would run later,
        // outside the sandbox: it was undone, and that is a failure the model must hear of.
        if !out.restored.is_empty() {
            obs.ok = false;
            obs.summary = format!(
                "{}; it changed {}, which the agent never lets a command change: put back",
                obs.summary,
                out.restored.join(", ")
            );
            obs.hint = Some("leave .git/ alone; change the repository's files instead".to_owned());
        }
        obs
    }

    /// Saves pre-images, revalidates and writes, then journals each file's commit.
    fn commit(
        &mut self,
        summary: String,
        changes: &[act::FileChange],
        dirs: &[String],
        repairs: &[&'static str],
        diff: String,
    ) -> Result<Observation, AgentError> {
        // Pre-images and the commit record go to the journal before any byte is written, so
        // a crash mid-commit still leaves undo what it needs.
        for c in changes {
            if let Some(pre) = &c.pre {
                self.journal.save_blob(pre)?;
            }
        }
        self.tally.commits += 1;
        let id = self.tally.commits;
        // Directories the commit will create (a MKDIR, or the parents of a new file), so that
        // undo can remove them again.
        for path in act::new_dirs(self.ws, changes, dirs) {
            self.emit(Event::CommitDir {
                turn: self.turn,
                id,
                path,
            })?;
        }
        for c in changes {
            self.emit(Event::Commit {
                turn: self.turn,
                id,
                path: c.path.clone(),
                pre_sha256: c.pre_sha(),
                post_sha256: c.post_sha(),
                pre_mode: c.pre_mode,
                repairs: repairs.iter().map(|r| (*r).to_owned()).collect(),
            })?;
        }
        if let Err(failure) = act::commit(self.ws, changes, dirs) {
            let failure = *failure;
            self.emit(Event::CommitFailed {
                id,
                reason: failure.observation.summary.clone(),
                rolled_back: failure.unrestored.is_empty(),
                touched: failure.touched,
                unrestored: failure.unrestored,
            })?;
            return Ok(failure.observation);
        }
        for c in changes {
            self.tally.note_change(&c.path, c.pre.as_deref());
        }
        let mut obs = Observation::ok(summary, diff);
        let search_repairs: Vec<&str> = repairs
            .iter()
            .copied()
            .filter(|r| *r != crate::splice::PARTIAL_FILE_MERGED)
            .collect();
        if !search_repairs.is_empty() {
            obs.hint = Some(format!(
                "SEARCH matched after repair: {}",
                search_repairs.join(", ")
            ));
        } else if self.cfg.protocol == prompt::Protocol::Whole && self.cfg.verify.is_none() {
            // Without a check, nothing else asks: small models write the file again, or
            // copy this answer, where DONE was meant.
            obs.hint = Some(crate::whole::AFTER_CHANGE.to_owned());
        }
        // What was just written and does not parse is told with the change, while the model
        // still has the file in view.
        let broken: Vec<_> = changes
            .iter()
            .filter(|c| self.cfg.lint && !self.tally.lint_exempt.contains(&c.path))
            .filter_map(|c| {
                let why = crate::lint::check(&c.path, c.post.as_deref()?)?;
                Some((c.path.clone(), why))
            })
            .collect();
        if !broken.is_empty() {
            obs.summary = format!("{}; but {}", obs.summary, crate::lint::describe(&broken));
            obs.hint = Some(LINT_HINT.to_owned());
        }
        // A new file that is an exact copy of one still in place: a move half done.
        let copies = self.tally.copies(self.ws);
        if !copies.is_empty() {
            obs.summary = format!("{}; note: {}", obs.summary, describe_copies(&copies));
            if broken.is_empty() {
                obs.hint = Some(copy_hint(&copies));
            }
        }
        // So is an import the change broke, in whichever file holds it.
        let mut bare_values = false;
        let imports = if self.cfg.lint {
            let mut found = crate::imports::broken(self.ws, &self.tally.changed);
            let (unbound, values) = self.unbound_names();
            bare_values = values && found.is_empty();
            found.extend(unbound);
            found
        } else {
            Vec::new()
        };
        if !imports.is_empty() {
            obs.summary = format!(
                "{}; but {}",
                obs.summary,
                crate::imports::describe(&imports).replace('\n', "; ")
            );
            if broken.is_empty() {
                obs.hint = Some(
                    if bare_values {
                        VALUE_HINT
                    } else {
                        IMPORTS_HINT
                    }
                    .to_owned(),
                );
            }
        }
        Ok(obs)
    }

    /// Runs `--verify` after DONE: `None` when it passes, else the observation to feed back.
    /// Runs `--verify`: for a DONE (`done` holds its summary), or after a turn that changed
    /// the repository (`None`). For a DONE, `None` when it passed; else the observation to
    /// feed back (a rejected DONE is counted as a false success; a failure after a change is
    /// not, and a pass after a change is told too).
    fn verify(&mut self, done: Option<&Action>) -> Result<Option<Observation>, AgentError> {
        let argv = self.cfg.verify.clone().unwrap_or_default();
        let mut obs = self.run_check(&argv);
        let turn = self.turn;
        self.emit(Event::Verify {
            turn,
            ok: obs.ok,
            summary: obs.summary.clone(),
            after_change: done.is_none(),
        })?;
        let check = quote_argv(&argv);
        // The check the model wrote first is evidence, not proof: a small model's script can
        // test what the task never said. A DONE said again on the tree it already failed on,
        // failing the same way, is taken, as a DONE without a check would be.
        if done.is_some() && !obs.ok && self.own_check.is_some() {
            let now = (act::tree_fingerprint(self.ws), obs.output.clone());
            if self.own_refused.as_ref() == Some(&now) {
                self.own_overruled = true;
                return Ok(None);
            }
            self.own_refused = Some(now);
        }
        match (done, obs.ok) {
            (Some(_), true) => return Ok(None),
            (Some(action), false) => {
                self.witness("check")?;
                self.tally.false_successes += 1;
                let summary = match action {
                    Action::Done { summary } => summary.as_str(),
                    _ => "",
                };
                obs.summary = format!(
                    "DONE ({summary}) rejected: `{check}` failed, {}",
                    obs.summary
                );
                obs.hint =
                    Some("the task is not finished; fix the failure, then DONE again".to_owned());
                // A DONE rejected again with the same failure is a loop like any other
                // action's: counted, told, and stopped at `loop_repeats`.
                let output = crate::observe::redact(&obs.output);
                let key = loop_key(&render(action), obs.ok, &obs.summary, &output);
                if self.tally.last.as_ref() == Some(&key) {
                    obs.hint = Some(
                        "DONE again changes nothing while the check fails: change the files \
                         so that it passes (its output above says what fails), then DONE"
                            .to_owned(),
                    );
                }
                self.tally.saw(key);
            }
            (None, true) => {
                obs.summary = format!("the check `{check}` passes now: {}", obs.summary);
                obs.hint = Some("if the task is finished, reply DONE; if not, go on".to_owned());
            }
            (None, false) => {
                obs.summary = format!(
                    "the check `{check}` fails after your change: {}",
                    obs.summary
                );
                obs.hint = Some(
                    "fix what the output shows; the check runs again after each change".to_owned(),
                );
            }
        }
        // A failure the session's own change explains: said beside the output.
        if !obs.ok
            && let Some(hint) = crate::explain::missing_args_hint(
                &obs.output,
                self.ws,
                &self.tally.changed,
                &self.tally.originals,
            )
        {
            obs.hint = Some(hint);
        } else if !obs.ok {
            let files: Vec<(&str, &str)> = self
                .check_files
                .iter()
                .filter_map(|f| Some((f.path.as_str(), f.content.as_deref()?)))
                .collect();
            let before: Vec<String> = self
                .tally
                .originals
                .values()
                .flatten()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            let before: Vec<&str> = before.iter().map(String::as_str).collect();
            if let Some(hint) =
                crate::explain::option_leaked(&self.cfg.task, &obs.output, &files, &before)
            {
                obs.hint = Some(hint);
            }
        }
        self.journal_observation(&obs)?;
        Ok(Some(obs))
    }

    /// A refused DONE's tree judged by the configured [`crate::config::DoneWitness`] and
    /// journaled; nothing where none is configured or it cannot judge.
    fn witness(&mut self, why: &str) -> Result<(), AgentError> {
        let Some(passes) = self.cfg.witness.as_ref().and_then(|w| w.passes(self.ws)) else {
            return Ok(());
        };
        self.emit(Event::Witnessed {
            turn: self.turn,
            why: why.to_owned(),
            passes,
        })
    }

    /// The turn as history keeps it.
    fn record_turn(&self, reply: String, observations: &[(String, Observation)]) -> TurnRecord {
        turn_record(
            self.ws,
            self.cfg,
            (&self.journal.id, self.turn),
            reply,
            observations,
            &self.malformed,
            self.tally.commits > 0,
        )
    }
}

/// What to do about a file that does not parse.
const LINT_HINT: &str =
    "fix the file so that it parses (the line is named above), writing it again with the fix";

/// `new is an exact copy of original, which is still there`, for each pair.
fn describe_copies(copies: &[(String, String)]) -> String {
    copies
        .iter()
        .map(|(new, original)| {
            format!("{new} is an exact copy of {original}, which is still there")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What to do about copies: a move deletes the original.
fn copy_hint(copies: &[(String, String)]) -> String {
    let (new, original) = &copies[0];
    format!(
        "to move a file, the old one must go: reply DELETE {original} on a line of its own \
         (or MOVE {original} -> {new} instead of writing the copy)"
    )
}

const UNBOUND_HINT: &str = "add the import that name needs at the top of the file (`import \
     NAME` for a module, `from MODULE import NAME` for a name a module defines), writing the file \
     again with everything else kept";

/// The repair a commit of [`Session::finish_rename`] carries in the journal.
const RENAME_FINISHED: &str = "rename_finished";

const VALUE_HINT: &str = "give that name a value before the line that uses it (or write the \
     line as it was before your change), writing the file again with everything else kept";

const IMPORTS_HINT: &str = "update the import to where the module or name is now (or put it \
     back), writing the importing file again with the fix";

fn echo_observation() -> Observation {
    Observation::error(
        crate::record::ECHO_SUMMARY,
        Some("replace the placeholders with a real path, pattern or program"),
    )
}

/// The hint of an action that repeats the previous one with the same result: a small model at
/// a low temperature otherwise sends it again until the loop stop ends the session. It names
/// the step that moves on from what this kind of action shows.
fn repeat_hint(action: &Action, protocol: prompt::Protocol) -> String {
    let next = match policy::effect(action) {
        policy::Effect::Read if protocol == prompt::Protocol::Tools => {
            "you have what it shows: now change the code (call edit, or create to replace a \
             small file), or run the check"
        }
        policy::Effect::Read if protocol == prompt::Protocol::Whole => {
            "you have what it shows: now change the code (the file's path, then its complete \
             new content in a fenced block), or RUN the check"
        }
        policy::Effect::Read => {
            "you have what it shows: now change the code (EDIT, or CREATE to replace a small \
             file), or RUN the check"
        }
        policy::Effect::Run => "change the code first, then RUN it again",
        _ => "do something else: READ the file to see it as it is now, or try another change",
    };
    format!(
        "you did exactly this last turn and got the same result; repeating it changes nothing — {next}"
    )
}

/// The hint of the last action of a turn that repeats an earlier turn, action for action and
/// result for result: the same reply again changes nothing.
fn repeat_turn_hint(protocol: prompt::Protocol) -> &'static str {
    match protocol {
        prompt::Protocol::Whole => {
            "this reply repeats an earlier one and got the same results: the task is not done. \
             Change what the task asks (the file's path, then its complete new content with the \
             change made), or try another way"
        }
        _ => {
            "this reply repeats an earlier one and got the same results: the task is not done. \
             Make the change the task asks, or try another way"
        }
    }
}

fn no_change_observation(protocol: prompt::Protocol) -> Observation {
    Observation::error(
        "DONE refused: nothing in the repository has changed since the session started",
        Some(match protocol {
            prompt::Protocol::Text => {
                "the task needs a change: EDIT the lines to change (or CREATE the file \
                 whole), then DONE"
            }
            prompt::Protocol::Whole => {
                "the task needs a change: write the file's path on a line by itself, then \
                 its complete new content in a fenced code block (to delete, move or make a \
                 directory: DELETE path, MOVE src -> dst or MKDIR path, on a line of its own); \
                 DONE after that"
            }
            prompt::Protocol::Tools => {
                "the task needs a change: call edit (or create to replace a small file \
                 whole), then done"
            }
        }),
    )
}

fn premature_done_observation() -> Observation {
    Observation::error(
        "DONE refused: nothing has been done yet in this session",
        Some(
            "act first: LIST or READ to look, EDIT or CREATE to change, RUN to check; DONE once the task is finished",
        ),
    )
}

fn unreachable_plan() -> Observation {
    // `act` returns early for these plans before any approval, so this is never reached.
    Observation::error("internal: plan already handled", None)
}

/// The text up to its last newline, and where each of its lines starts; the list ends with
/// the text's length, so line `i` is `done[starts[i]..starts[i + 1]]`. `None` without a
/// newline.
fn whole_lines(text: &str) -> Option<(&str, Vec<usize>)> {
    let done = &text[..text.rfind('\n')? + 1];
    let starts = std::iter::once(0)
        .chain(done.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    Some((done, starts))
}

/// The block of whole lines a reply ends by repeating, if it does: the last `k` lines (1 to 8)
/// written three times in a row (four for a single line), holding at least 8 characters that
/// are not whitespace. Code can repeat a short line or two; a block that comes back whole
/// three times is a model stuck in a loop.
pub(crate) fn repeating_tail(text: &str) -> Option<&str> {
    let (done, starts) = whole_lines(text)?;
    let lines = starts.len() - 1;
    let line = |i: usize| &done[starts[i]..starts[i + 1]];
    for k in 1..=8usize {
        let copies = if k == 1 { 4 } else { 3 };
        if lines < k * copies {
            break;
        }
        let first = lines - k * copies;
        let same = (0..k).all(|j| (1..copies).all(|c| line(first + j) == line(first + c * k + j)));
        let block = &done[starts[lines - k]..];
        let content = block.chars().filter(|c| !c.is_whitespace()).count();
        if same && content >= 8 {
            return Some(block);
        }
    }
    None
}

/// The whole protocol's loop: a reply that ends by writing the same stretch of whole lines
/// twice in a row, where the stretch holds a fence line and at least three lines — the same
/// file block (or the same run of blocks) again. One file's content can repeat lines; a
/// block's closing and opening fences coming back with the same lines between is a model
/// writing what it already wrote.
pub(crate) fn repeated_blocks(text: &str) -> Option<&str> {
    let (done, starts) = whole_lines(text)?;
    let lines = starts.len() - 1;
    let line = |i: usize| &done[starts[i]..starts[i + 1]];
    for k in 3..=lines / 2 {
        let first = lines - 2 * k;
        if !(0..k).all(|j| line(first + j) == line(first + k + j)) {
            continue;
        }
        let fence = (first + k..lines).any(|i| line(i).trim_start().starts_with("```"));
        let content = (first + k..lines).any(|i| {
            let l = line(i).trim();
            !l.is_empty() && !l.starts_with("```")
        });
        if fence && content {
            return Some(&done[starts[first + k]..]);
        }
    }
    None
}

/// `file` of `ws` as a fenced block with line `line` (numbered from 1) written as `fixed`,
/// indented as the line was: what a refusal that knows the line whole shows the model.
fn with_line(ws: &Workspace, file: &str, line: usize, fixed: &str) -> Option<String> {
    let text = String::from_utf8(ws.read(file).ok()??).ok()?;
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines.get_mut(line.checked_sub(1)?)?;
    let indent: String = at.chars().take_while(|c| c.is_whitespace()).collect();
    *at = format!("{indent}{fixed}");
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Some(format!(
        "{}\n{}",
        crate::whole::to_write_heading(file, line),
        crate::whole::fenced(file, &out)
    ))
}

#[cfg(test)]
mod tests {
    use super::{repeated_blocks, repeating_tail};

    #[test]
    fn a_file_block_written_twice_in_a_row_is_repeated_and_two_files_are_not() {
        let block = "notes.txt\n```\ncurrent notes\nmore\n```\n";
        let twice = format!("Here:\n{block}{block}");
        assert_eq!(repeated_blocks(&twice), Some(block));
        // Alternating blocks: the pair comes back whole.
        let other = "a.py\n```\nx = 1\n```\n";
        let pair = format!("{block}{other}");
        assert_eq!(
            repeated_blocks(&format!("{pair}{pair}")),
            Some(pair.as_str())
        );
        // Two files with the same content are two blocks, not a loop.
        let two = "a.txt\n```\nsame\n```\nb.txt\n```\nsame\n```\n";
        assert_eq!(repeated_blocks(two), None);
        // Lines repeated inside one file's content are code.
        let code = "m.py\n```\nx = 1\ny = 2\nx = 1\ny = 2\n";
        assert_eq!(repeated_blocks(code), None);
        assert_eq!(repeated_blocks("no newline"), None);
    }

    #[test]
    fn a_block_written_three_times_is_a_repeating_tail_and_code_is_not() {
        let looped = "Here:\ndef add(a, b):\n    return a + b\n".to_owned()
            + &"def add(a, b):\n    return a + b\n".repeat(2);
        assert_eq!(
            repeating_tail(&looped),
            Some("def add(a, b):\n    return a + b\n")
        );
        // An unfinished last line does not count until it ends.
        assert!(repeating_tail(&(looped.clone() + "def ad")).is_some());
        // One line needs four copies; short or blank lines never count.
        assert_eq!(repeating_tail(&"print(x)\n".repeat(3)), None);
        assert_eq!(repeating_tail(&"print(x)\n".repeat(4)), Some("print(x)\n"));
        assert_eq!(repeating_tail(&"}\n".repeat(9)), None);
        assert_eq!(repeating_tail("\n\n\n\n\n\n"), None);
        // Twice is not a loop, and ordinary code is not either.
        assert_eq!(repeating_tail(&"x = 1\ny = 2\n".repeat(2)), None);
        let code = "def f():\n    a = 1\n    b = 2\n    return a + b\n\nprint(f())\n";
        assert_eq!(repeating_tail(code), None);
        assert_eq!(repeating_tail("no newline at all"), None);
    }
}
