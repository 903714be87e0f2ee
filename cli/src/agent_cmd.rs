//! `bellows agent`: command-line flags, loading the model as `serve` does, and handing an
//! engine to the `agent` crate's loop (which knows nothing of llama.cpp).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent::policy::{RunPattern, TerminalApprover};
use agent::sandbox::Confinement;
use agent::view::{JsonLines, Terminal};
use agent::{ApprovalMode, Config, GrammarChoice, Policy, StopReason, View, Workspace};
use models::GrammarMode;

use crate::model::ModelArgs;
use crate::progress::Progress;

/// Run the coding agent on a task in a repository, on the in-process model (offline).
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AgentCommand {
    /// Restore the files a session changed, newest change first.
    Undo(UndoArgs),
    /// Run a suite of repository tasks (`DIR/*/task.md`) and report solved tasks, false
    /// successes, turns, tokens and stop reasons.
    Bench(Box<BenchArgs>),
    /// Apply an isolated session's changes (`--isolate`) to the repository, refusing files
    /// changed there since the copy was made.
    Promote(PromoteArgs),
    /// Remove an isolated copy (`git worktree remove` for a worktree), with its session.
    #[command(alias = "cleanup")]
    Discard(DiscardArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct DiscardArgs {
    /// The isolated copy's id (a directory under .bellows/isolated).
    pub id: String,
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
}

#[derive(Debug, Clone, clap::Args)]
pub struct PromoteArgs {
    /// The isolated copy's id (a directory under .bellows/isolated).
    pub id: String,
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Only list what would change.
    #[arg(long)]
    pub dry_run: bool,
    /// Overwrite files changed in the repository since the copy was made.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// The suite: one folder per task with repo/, task.md, verify.sh, and optionally
    /// oracle.jsonl (the oracle's replies) and check (a visible check run after DONE).
    #[arg(default_value = "benches/agent-tasks")]
    pub dir: PathBuf,
    /// llama (the in-process model) or oracle (each task's scripted replies; tests the
    /// harness, and must solve every task; tasks without oracle.jsonl are skipped).
    #[arg(long, default_value = "llama", value_parser = ["llama", "oracle"])]
    pub engine: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// off, lazy or strict. Default: the profile's grammar mode.
    #[arg(long, value_parser = ["off", "lazy", "strict"])]
    pub grammar: Option<String>,
    /// How the model is asked to act: text (verb lines, SEARCH/REPLACE blocks), whole
    /// (each changed file written whole after its path) or tools (the model's own tool calls
    /// through its chat template). Default: the profile's `agent_protocol`.
    #[arg(long, value_parser = ["text", "whole", "tools"])]
    pub protocol: Option<String>,
    /// Turns per attempt. The default is what the figures in benches/README.md ran with.
    #[arg(long, default_value_t = 8)]
    pub max_turns: u32,
    /// Tokens kept free for each reply (its max_tokens); a file written whole must fit.
    /// Default: 1024, or a quarter of the context when that is less.
    #[arg(long)]
    pub reply_reserve: Option<u32>,
    /// Generation stops once this many actions are decoded in a turn. Default: the profile's
    /// `actions_per_turn` (0 there: no limit), else 1.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub actions_per_turn: Option<u64>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Only the tasks whose folder name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Keep each task's copy under the system temp dir.
    #[arg(long)]
    pub keep: bool,
    /// Attempts per task, as `bellows agent --attempts`: stop at the first whose check passes
    /// (all N without a check, then a vote); reports pass@1 and solved within N.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub attempts: u32,
    /// Attempts that run at once, as sequences of one llama.cpp context sharing their prompt
    /// (as `bellows agent --parallel`); default: 1 on the CPU, --attempts (at most 4) with
    /// --gpu-layers.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: Option<u32>,
    /// Ignore the tasks' visible `check` files: DONE is then held only to the task's words and
    /// commands and to the repository's tests the agent finds (see --no-tests).
    #[arg(long)]
    pub no_check: bool,
    /// Do not look for the repository's own tests when a task has no check (as `bellows
    /// agent --no-tests`).
    #[arg(long)]
    pub no_tests: bool,
    /// After the first turn, send the first message again from the files as they are now,
    /// with what came of the earlier replies, instead of the conversation (as `bellows agent
    /// --restate`). Default: the profile's `agent_restate`.
    #[arg(long, overrides_with = "no_restate")]
    pub restate: bool,
    /// Send the conversation so far after each turn, whatever the profile says.
    #[arg(long, overrides_with = "restate")]
    pub no_restate: bool,
    /// In the whole protocol, ask for the change in one or two sentences before the files
    /// (as `bellows agent --say-first`).
    #[arg(long)]
    pub say_first: bool,
    /// In the whole protocol, a file of more lines than this is changed without writing it
    /// whole (as `bellows agent --long-file-lines`); 0: every file is written whole.
    #[arg(long, value_name = "LINES", default_value_t = agent::config::DEFAULT_LONG_FILE_LINES)]
    pub long_file_lines: usize,
    /// How a long file is changed: `blocks` or `definitions` (as `bellows agent
    /// --long-file-edits`).
    #[arg(long, value_name = "HOW", default_value = "definitions", value_parser = long_edit)]
    pub long_file_edits: agent::whole::LongEdit,
    /// Where a task has no `check`, ask the model for a check of what the task states before
    /// its first change, and hold DONE to it (as `bellows agent --own-check`).
    #[arg(long)]
    pub own_check: bool,
    /// Judge DONE by the general rules alone, without the rules and first-message notes that
    /// read a kind of task's wording (as `bellows agent --no-wording-rules`).
    #[arg(long)]
    pub no_wording_rules: bool,
}

/// How RUN's commands are confined (Landlock on Linux; see `agent::sandbox`).
#[derive(Debug, Clone, clap::Args)]
pub struct SandboxArgs {
    /// Let RUN's commands use the network (TCP bind and connect are denied by default).
    #[arg(long)]
    pub allow_net: bool,
    /// Where the kernel cannot confine commands (no Landlock), run them unconfined instead of
    /// refusing every RUN. Never lifts a sandbox the kernel provides.
    #[arg(long)]
    pub unsandboxed_run: bool,
}

impl SandboxArgs {
    /// The confinement these flags ask for on this kernel.
    pub fn confinement(&self) -> Confinement {
        Confinement::for_kernel(self.allow_net, self.unsandboxed_run)
    }
}

/// Says on stderr, in one line, what is enforced on commands run beneath `root` (loudly when
/// nothing is).
fn announce(confinement: Confinement, root: &Path) {
    let report = confinement.report(root, agent::sandbox::probe());
    if confinement == Confinement::Unconfined {
        eprintln!("WARNING: {report}");
    } else {
        eprintln!("{report}");
    }
}

/// The line a run whose stdin is not a terminal starts with: the approval mode in force, what
/// it allows, and how to change it (a script's run is `plan`, read-only, unless it says).
pub fn approval_line(mode: ApprovalMode, chosen: bool) -> String {
    let (name, allows) = match mode {
        ApprovalMode::Plan => ("plan", "read-only: no edits, no commands"),
        ApprovalMode::Ask => ("ask", "each edit and command asked for on stdin"),
        ApprovalMode::Edits => (
            "edits",
            "edits applied unasked, commands asked for unless --allow-run matches",
        ),
        ApprovalMode::Auto => (
            "auto",
            "edits and commands unasked, commands in the sandbox",
        ),
    };
    let why = if chosen {
        "--approval"
    } else {
        "stdin is not a terminal"
    };
    format!("approval: {name} ({allows}; {why}); change it with --approval plan|ask|edits|auto")
}

/// An engine replaying the replies in `file` (JSONL, one JSON string per line), then saying
/// something with no action: what `--oracle` runs on.
fn oracle_engine(file: &Path) -> anyhow::Result<Arc<dyn models::Engine>> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("--oracle {}: {e}", file.display()))?;
    let engine = models::ScriptedEngine::new(
        "oracle",
        models::Script::chunked("The oracle has nothing more to say.\n", 8),
    );
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let reply: String = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "--oracle {}:{}: not a JSON string: {e}",
                file.display(),
                i + 1
            )
        })?;
        engine.push(models::Script::chunked(&reply, 8));
    }
    Ok(Arc::new(engine))
}

/// `--actions-per-turn`, else the profile's (0 there: no limit), else 1.
fn actions_per_turn(flag: Option<u64>, profile: Option<&models::Profile>) -> usize {
    match (flag, profile.and_then(|p| p.actions_per_turn)) {
        (Some(n), _) => usize::try_from(n).unwrap_or(usize::MAX),
        (None, Some(0)) => usize::MAX,
        (None, Some(n)) => n as usize,
        (None, None) => 1,
    }
}

/// Attempts at once: `--parallel`; else, with layers on a GPU (where a wider batch costs
/// little), all of them up to [`MAX_SIDE_BY_SIDE`]; else one at a time — on 2 CPU cores four
/// 0.5B attempts side by side took 606 s against 526 s one after another (benches/README.md,
/// session 12), a batch of four costing about four steps there. Never more than there are.
fn side_by_side(parallel: Option<u32>, attempts: u32, gpu_layers: u32) -> u32 {
    let default = if gpu_layers > 0 { MAX_SIDE_BY_SIDE } else { 1 };
    parallel.unwrap_or(default).min(attempts).max(1)
}

/// The default cap on attempts that run at once on a GPU.
const MAX_SIDE_BY_SIDE: u32 = 4;

/// The reply reserve: `--reply-reserve`, else [`DEFAULT_REPLY_RESERVE`] or a quarter of a
/// smaller context (`--ctx 1024` still leaves the prompt three quarters).
fn reply_reserve(flag: Option<u32>, n_ctx: u32) -> u32 {
    flag.unwrap_or(DEFAULT_REPLY_RESERVE.min(n_ctx / 4).max(1))
}

/// Tokens kept free for a reply by default: the whole protocol writes each changed file
/// whole, and the agent bench's figures ran with this.
const DEFAULT_REPLY_RESERVE: u32 = 1024;

/// The profile's system-prompt style (checked when the profile was parsed).
fn prompt_style(profile: &models::Profile) -> codec::registry::PromptStyle {
    codec::registry::PromptStyle::parse(&profile.prompt).unwrap_or_default()
}

/// The model `bellows agent` (and its bench) loads without `--model`: the one the agent
/// bench shows solving the most tasks at a usable speed on two CPU cores (benches/README.md,
/// agent figures). Fetched on first use like any known name.
pub const AGENT_MODEL: &str = "qwen-coder-1.5b";

/// `--protocol`, else the profile's `agent_protocol` (checked when the profile was parsed).
fn protocol(flag: Option<&str>, profile: &models::Profile) -> agent::Protocol {
    agent::Protocol::parse(flag.unwrap_or(&profile.agent_protocol)).unwrap_or_default()
}

/// `--restate` or `--no-restate` (the last given wins), else the profile's `agent_restate`.
fn restate(on: bool, off: bool, profile: &models::Profile) -> bool {
    match (on, off) {
        (true, _) => true,
        (_, true) => false,
        _ => profile.agent_restate,
    }
}

/// `--grammar`, else the profile's mode.
fn grammar_choice(flag: Option<&str>, profile: GrammarMode) -> GrammarChoice {
    match flag {
        Some(g) => GrammarChoice::parse(g).unwrap_or(GrammarChoice::Off),
        None => match profile {
            GrammarMode::Off => GrammarChoice::Off,
            GrammarMode::Lazy => GrammarChoice::Lazy,
            GrammarMode::Strict => GrammarChoice::Strict,
        },
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// What to do, in plain words.
    pub task: Option<String>,
    /// The repository to work in; every path the model names is confined to it.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub endpoint: crate::endpoint::EndpointArgs,
    /// plan (read-only), ask (every change and command), edits (edits automatic, commands
    /// ask), auto (everything unasked; RUN is confined by the sandbox). Default: ask on a
    /// terminal, else plan.
    #[arg(long, value_parser = ["plan", "ask", "edits", "auto"])]
    pub approval: Option<String>,
    /// Commands `edits` mode runs unasked (repeatable): words quoted as on a RUN line, each
    /// equal to one argv element, a final lone `*` matching any further arguments, e.g.
    /// `--allow-run 'cargo test *'`.
    #[arg(long, value_name = "PATTERN")]
    pub allow_run: Vec<RunPattern>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// off, lazy (switches on at a verb) or strict (every reply decodes). Default: the
    /// profile's grammar mode.
    #[arg(long, value_parser = ["off", "lazy", "strict"])]
    pub grammar: Option<String>,
    /// How the model is asked to act: text (verb lines, SEARCH/REPLACE blocks, files shown
    /// numbered), whole (files shown as they are; each changed file written whole after its
    /// path; other actions as verb lines) or tools (the model's own tool calls through its
    /// chat template, the builtins offered as tools). Default: the profile's `agent_protocol`.
    #[arg(long, value_parser = ["text", "whole", "tools"])]
    pub protocol: Option<String>,
    #[arg(long, default_value_t = 30)]
    pub max_turns: u32,
    /// Generation stops once this many actions are decoded in a turn. Default: the profile's
    /// `actions_per_turn` (0 there: no limit), else 1.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub actions_per_turn: Option<u64>,
    /// Command (POSIX quoting, no shell) that must pass after DONE; a failure is fed back. It
    /// also runs after each change. The test files it runs (`python3 test_a.py` runs
    /// test_a.py) are read-only to the session unless the task names them as files to change;
    /// a change of their import lines alone is allowed.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Turns in a row without a valid action before stopping.
    #[arg(long, default_value_t = 3)]
    pub stall_turns: u32,
    /// Same action with the same result this many times in a row stops the session.
    #[arg(long, default_value_t = 3)]
    pub loop_repeats: u32,
    /// Prompt plus generated tokens for the whole session.
    #[arg(long)]
    pub token_budget: Option<u64>,
    /// Tokens kept free for each reply (its max_tokens); a file written whole (the whole
    /// protocol) must fit in it. Default: 1024, or a quarter of the context when that is less.
    #[arg(long)]
    pub reply_reserve: Option<u32>,
    /// Characters of start context in the first message (repository map, the files the task
    /// names, files holding its identifiers); capped at what the context window leaves.
    /// Default: 6000 for the text protocol, 10000 for whole (which shows files whole).
    #[arg(long)]
    pub context_budget: Option<usize>,
    /// Whole protocol: send the files and the task as two messages (files, an assistant's
    /// acknowledgement, then the task alone) instead of one. With --attempts, even attempts
    /// use the other layout.
    #[arg(long)]
    pub files_apart: bool,
    /// Whole protocol: show whole only the files the task points at (the files it names,
    /// what they import or source, what defines its identifiers), sources before tests; the
    /// others appear only in the repository map; where a wrong Python command the task names
    /// runs at most six functions, only those functions are shown, in their files, and where
    /// its trace shows the one call where its value first goes wrong (a text it was given
    /// and lost, or the wrong value made from arguments without it), only that function,
    /// with its variables named. With --attempts, attempts 3 and 4 focus.
    #[arg(long)]
    pub focus: bool,
    /// With --focus, where the first message shows the one function where the value first
    /// goes wrong: show it without its body (signature and docstring kept) for the model to
    /// write anew, instead of copying it back. With --attempts, the even focused attempts do.
    #[arg(long)]
    pub anew: bool,
    /// After the first turn, send the first message again, made from the files as they are
    /// now and telling what came of the earlier replies, instead of the conversation so far.
    /// Small models copy their last reply or its answer from a conversation; this leaves
    /// nothing of the kind last in the prompt. Costs a prompt evaluation per turn (no prefix
    /// is shared after a change). Default: the profile's `agent_restate`.
    #[arg(long, overrides_with = "no_restate")]
    pub restate: bool,
    /// Send the conversation so far after each turn, whatever the profile says.
    #[arg(long, overrides_with = "restate")]
    pub no_restate: bool,
    /// In the whole protocol, ask the model to say in one or two sentences what is wrong and
    /// what it will change before it writes the files, as aider's whole-file prompt does.
    #[arg(long)]
    pub say_first: bool,
    /// In the whole protocol, a file shown with more lines than this is to be changed without
    /// writing it whole (see --long-file-edits): a small change in a long file then costs a
    /// short reply, not one the reply limit cuts. A file written whole anyway is still taken.
    /// 0: every file is written whole.
    #[arg(long, value_name = "LINES", default_value_t = agent::config::DEFAULT_LONG_FILE_LINES)]
    pub long_file_lines: usize,
    /// How a long file (see --long-file-lines) is changed: `blocks` asks for SEARCH/REPLACE
    /// edit blocks under its path; `definitions` asks for only the functions that change,
    /// spliced into the file (Python and shell; other files get `blocks`).
    #[arg(long, value_name = "HOW", default_value = "definitions", value_parser = long_edit)]
    pub long_file_edits: agent::whole::LongEdit,
    /// Without --verify, ask the model first for a short test script of what the task states
    /// (the commands it shows and what they should print). The script must fail on the files
    /// as they are (one that passes already is sent back once); it is kept outside the
    /// repository, runs on a throwaway copy after every change, and DONE needs it to pass.
    #[arg(long)]
    pub own_check: bool,
    /// Judge DONE by the general rules alone: a command the task says fails must now
    /// succeed, the files it names change, the files it gives as input stay, the
    /// repository's passing tests still pass, the check passes. Leaves out the rules and
    /// first-message notes that read a kind of task's wording (what it says to delete,
    /// create, rename, pass or print, its example, the option it adds).
    #[arg(long)]
    pub no_wording_rules: bool,
    /// Do not syntax-check the files the session writes. By default a written Python
    /// (`python3`'s parser, nothing run), shell (`bash -n`) or JSON file that does not parse
    /// is told to the model with the change, and DONE is refused while one stands (a file
    /// that did not parse before the session is not held against it).
    #[arg(long)]
    pub no_lint: bool,
    /// Do not run the commands the task names. By default a command the task writes in
    /// backticks (`python3 cli.py --count 3`), as an interpreter and a file of the repository
    /// (python3 app.py), or as a call of a Python function of the repository with literal
    /// arguments (summary([])) runs, without a shell, on a throwaway copy of the files:
    /// before the first turn (its output joins the first message), after each change (the new
    /// output is told), and at DONE, which is refused while every command the task calls wrong
    /// still prints exactly what it printed before, or while one it says fails still fails (a
    /// test still exits non-zero, a traceback, the error text the task quotes). Also off: the
    /// DONE checks read from the task's words (a file it says to delete still there, one it
    /// says to create missing, a rename not done, a function it deletes still defined, the
    /// text it gives a new file missing, a function or option it adds in no changed file).
    #[arg(long)]
    pub no_probe: bool,
    /// Without --verify, do not look for the repository's own tests. By default a test
    /// script at the top level or one directory down (test_x.py, x_test.py, test.sh, …; a
    /// Python one only when it asserts or has a __main__ block when run as a script) runs
    /// like a command the task names, at most two of them: DONE is refused while one that
    /// passed before the session fails, or one that failed before still fails (unless it
    /// failed for want of a module or program the machine lacks), and those failing tests are
    /// read-only to the session.
    #[arg(long)]
    pub no_tests: bool,
    /// After a turn that made no progress (nothing succeeded, or the turn came back as
    /// before), sample the next reply at least this warm, 0.15 warmer after each further one,
    /// each with a seed of its own: a greedy model given nearly the same prompt writes nearly
    /// the same reply. 0 keeps the configured sampling for every turn.
    #[arg(long, default_value_t = agent::config::DEFAULT_STUCK_TEMPERATURE)]
    pub stuck_temperature: f32,
    /// Seconds a RUN may take before it is killed.
    #[arg(long, default_value_t = 60)]
    pub run_timeout: u64,
    /// Continue session ID (a directory under .bellows/sessions) from its journal: its task
    /// and history, up to --max-turns more turns, appended to the same journal.
    #[arg(long, value_name = "ID", conflicts_with = "task")]
    pub resume: Option<String>,
    /// Work on a copy of the repository under .bellows/isolated/ID/ (a git worktree at HEAD
    /// with the uncommitted changes, in a git repository), leaving the real tree untouched;
    /// `bellows agent promote ID` applies the result, `bellows agent discard ID` removes it.
    #[arg(long, conflicts_with = "resume")]
    pub isolate: bool,
    /// Make N independent attempts, each in its own isolated copy, at rising temperatures
    /// (the profile's, then 0.4, 0.7, 0.9, 0.4, 0.7…) and seeds. With --verify the first attempt
    /// that passes it wins; without, the attempts that end with DONE vote by their changes.
    /// The winner's diff is asked for (promoted at once under --approval auto); the other
    /// copies are removed. Inside an attempt edits are not asked for, and outside auto the
    /// commands --allow-run does not match are declined.
    #[arg(long, value_name = "N", conflicts_with_all = ["resume", "isolate"],
          value_parser = clap::value_parser!(u32).range(1..))]
    pub attempts: Option<u32>,
    /// Keep every attempt's copy (`bellows agent promote ID` / `discard ID` later).
    #[arg(long, requires = "attempts")]
    pub keep_attempts: bool,
    /// How many attempts run at once: the model runs them as sequences of one llama.cpp
    /// context, decoded in one batch per step, and evaluates their shared prompt once (each
    /// keeps its own --ctx). Their turns are not shown while they run side by side (each
    /// attempt's journal holds them; the attempts' results are shown as they end). Default: 1
    /// (one after another, every turn shown) on the CPU, where a batch of several costs about
    /// as much as as many steps (measured); --attempts, at most 4, with --gpu-layers.
    #[arg(long, value_name = "K", requires = "attempts",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: Option<u32>,
    /// One JSON event per line on stdout instead of the readable view.
    #[arg(long)]
    pub json: bool,
    /// Replay the replies in FILE (JSONL, one JSON string per reply, as a bench task's
    /// `oracle.jsonl`) instead of a model: tests the harness, as `bellows agent bench --engine
    /// oracle` does (`scripts/agent.sh example --oracle` in CI).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["endpoint", "model"])]
    pub oracle: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct UndoArgs {
    /// Session id (a directory under .bellows/sessions); default: the latest.
    pub id: Option<String>,
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// How many committed actions to undo.
    #[arg(long, default_value_t = 1)]
    pub steps: usize,
    /// Restore even files changed since the session wrote them.
    #[arg(long)]
    pub force: bool,
}

/// Runs `bellows agent`; the exit status is 0 when the session ended done or verified.
pub fn run(args: &AgentArgs) -> anyhow::Result<i32> {
    if let Some(AgentCommand::Bench(b)) = &args.command {
        return bench(b);
    }
    if let Some(AgentCommand::Promote(p)) = &args.command {
        let ws = Workspace::new(&p.repo)?;
        let pending = agent::isolate::pending(&ws, &p.id)?;
        let changes = if p.dry_run {
            pending.changes
        } else {
            agent::isolate::promote(&ws, &p.id, p.force)?
        };
        for c in &changes {
            match c {
                agent::isolate::Change::Write(path) => println!("write {path}"),
                agent::isolate::Change::Link { path, target } => {
                    println!("link {path} -> {}", target.display())
                }
                agent::isolate::Change::Delete(path) => println!("delete {path}"),
            }
        }
        if changes.is_empty() {
            println!("nothing to promote");
        }
        if !pending.ignored.is_empty() {
            // Build output can run to thousands of paths: name a few.
            let shown: Vec<&str> = pending.ignored.iter().take(5).map(String::as_str).collect();
            let more = pending.ignored.len() - shown.len();
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            println!(
                "skipped {} ignored paths (git ignores them in the copy): {}{more}",
                pending.ignored.len(),
                shown.join(", ")
            );
        }
        if !p.dry_run {
            println!("remove the copy with: bellows agent discard {}", p.id);
        }
        return Ok(0);
    }
    if let Some(AgentCommand::Discard(d)) = &args.command {
        let ws = Workspace::new(&d.repo)?;
        let worktree = agent::isolate::discard(&ws, &d.id)?;
        let what = if worktree { "worktree" } else { "copy" };
        println!("removed isolated {what} {}", d.id);
        return Ok(0);
    }
    if let Some(AgentCommand::Undo(u)) = &args.command {
        let ws = Workspace::new(&u.repo)?;
        let restored = agent::undo(&ws, u.id.as_deref(), u.steps, u.force)?;
        for path in &restored {
            println!("restored {path}");
        }
        if restored.is_empty() {
            println!("nothing to undo");
        }
        return Ok(0);
    }
    let a = &args.run;
    let task = match (&a.task, &a.resume) {
        (Some(task), _) => task.clone(),
        // The journal's task replaces this one.
        (None, Some(_)) => String::new(),
        (None, None) => anyhow::bail!("a TASK is required: bellows agent \"TASK\""),
    };
    let mut ws = Workspace::new(&a.repo)?;
    ws.run_timeout = Duration::from_secs(a.run_timeout);
    if a.isolate {
        let (id, copy) = agent::isolate::isolate(&ws)?;
        eprintln!(
            "isolated copy {id} at {}; apply it with: bellows agent promote {id}",
            copy.root().display()
        );
        ws = copy;
    }
    // After isolating: the copy is the root commands may write beneath.
    ws.confinement = a.sandbox.confinement();
    announce(ws.confinement, ws.root());
    if let Some(id) = &a.resume {
        // Refuse an unknown session before spending seconds loading the model.
        agent::Journal::open(&ws, id)?;
    }
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mode = match a.approval.as_deref() {
        Some(m) => ApprovalMode::parse(m).unwrap_or(ApprovalMode::Plan),
        None if terminal => ApprovalMode::Ask,
        None => ApprovalMode::Plan,
    };
    if !terminal {
        eprintln!("{}", approval_line(mode, a.approval.is_some()));
    }
    // The loop sees only the `Engine` trait: a model loaded here, a remote server, or the
    // oracle's scripted replies.
    let slots = side_by_side(a.parallel, a.attempts.unwrap_or(1), a.model.gpu_layers);
    let (engine, profile) = match &a.oracle {
        Some(file) => (oracle_engine(file)?, models::Profile::generic()),
        None => crate::endpoint::engine(&a.endpoint, &a.model, AGENT_MODEL, slots)?,
    };
    let profile = &profile;
    if let Some(figures) = profile.measured.agent_summary() {
        eprintln!("profile {}: {figures}", profile.name);
    }
    let grammar = grammar_choice(a.grammar.as_deref(), profile.grammar);
    let mut policy = Policy::new(mode);
    policy.allow_run.clone_from(&a.allow_run);
    let mut cfg = Config::new(&task, policy);
    cfg.grammar = grammar;
    cfg.sampling = profile.sampling.clone();
    cfg.max_turns = a.max_turns;
    cfg.actions_per_turn = actions_per_turn(a.actions_per_turn, Some(profile));
    cfg.prompt_style = prompt_style(profile);
    cfg.protocol = protocol(a.protocol.as_deref(), profile);
    cfg.verify = match &a.verify {
        Some(v) => Some(
            codec::registry::split_argv(v).map_err(|e| anyhow::anyhow!("--verify {v:?}: {e:?}"))?,
        ),
        None => None,
    };
    cfg.stall_turns = a.stall_turns;
    cfg.loop_repeats = a.loop_repeats;
    cfg.token_budget = a.token_budget;
    cfg.reply_reserve = reply_reserve(a.reply_reserve, engine.info().n_ctx);
    cfg.context_budget = a.context_budget;
    cfg.files_apart = a.files_apart;
    cfg.focus = a.focus;
    cfg.anew = a.anew;
    cfg.restate = restate(a.restate, a.no_restate, profile);
    cfg.say_first = a.say_first;
    cfg.long_files = long_files(a.long_file_lines, a.long_file_edits);
    cfg.own_check = a.own_check;
    cfg.wording_rules = !a.no_wording_rules;
    cfg.lint = !a.no_lint;
    cfg.probes = !a.no_probe;
    cfg.found_tests = !a.no_tests;
    cfg.stuck_temperature = a.stuck_temperature;
    let readable: Box<dyn View> = if a.json {
        Box::new(JsonLines)
    } else {
        Box::new(Terminal)
    };
    // Where the run is (turn, tokens, elapsed; the attempt with --attempts), on stderr.
    let progress = Progress::new();
    let mut view: Box<dyn View> = Box::new(progress.view(readable));
    let mut approver = TerminalApprover;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Ctrl-C halts the generation (or command) in flight and ends the session as user_quit,
    // with its summary; a second Ctrl-C exits at once.
    let interrupt = cfg.interrupt.clone();
    runtime.spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if interrupt.fire() {
                eprintln!("\ninterrupted again: exiting now");
                agent::workspace::end_running_commands();
                std::process::exit(130);
            }
            eprintln!("\ninterrupted: stopping the session (Ctrl-C again to exit now)");
        }
    });
    exit_on_signal(&runtime, false);
    if let Some(n) = a.attempts {
        if mode == ApprovalMode::Plan {
            anyhow::bail!(
                "--attempts makes changes to choose from: use --approval ask, edits or auto"
            );
        }
        let report = runtime.block_on(agent::attempts::attempt(
            &engine,
            &ws,
            &cfg,
            n,
            a.keep_attempts,
            &mut approver,
            view.as_mut(),
            &mut Announce(progress.clone()),
        ))?;
        progress.finish();
        eprint!("{}", report.summary());
        let chosen = report.choice.winner().is_some();
        return Ok(i32::from(
            !chosen || report.settled == agent::attempts::Settled::Declined,
        ));
    }
    let outcome = match &a.resume {
        Some(id) => runtime.block_on(agent::resume(
            &engine,
            &ws,
            &cfg,
            id,
            &mut approver,
            view.as_mut(),
        ))?,
        None => runtime.block_on(agent::run(&engine, &ws, &cfg, &mut approver, view.as_mut()))?,
    };
    progress.finish();
    Ok(match outcome.reason {
        StopReason::Done | StopReason::Verified => 0,
        _ => 1,
    })
}

/// Says on stderr which attempt starts and how each ended, and keeps the progress line's
/// attempt.
struct Announce(Progress);

impl agent::attempts::Watcher for Announce {
    fn starting(&mut self, number: u32, of: u32, copy: &Workspace, sampling: &models::Sampling) {
        self.0.suspend(|| {
            eprintln!(
                "attempt {number}/{of} in {} (temperature {}, seed {})",
                copy.root().display(),
                sampling.temperature,
                sampling.seed.unwrap_or_default()
            );
        });
        self.0.attempt(number, of);
    }

    fn finished(&mut self, attempt: &agent::attempts::Attempt, _copy: &Workspace) {
        self.0.suspend(|| eprintln!("{}", attempt.summary()));
    }
}

/// The bench's attempts, told to the progress line.
struct BenchAttempts(Progress);

impl agent::attempts::Watcher for BenchAttempts {
    fn starting(&mut self, number: u32, of: u32, _: &Workspace, _: &models::Sampling) {
        self.0.attempt(number, of);
    }
}

/// SIGTERM (and Ctrl-C too where `ctrl_c`, when no session handles it) ends the process
/// group of every command running (RUN, a check, a probe, `verify.sh`) before the process
/// exits: a command must not outlive bellows, orphaned.
fn exit_on_signal(runtime: &tokio::runtime::Runtime, ctrl_c: bool) {
    use tokio::signal::unix::{SignalKind, signal};
    runtime.spawn(async move {
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return;
        };
        if term.recv().await.is_some() {
            agent::workspace::end_running_commands();
            std::process::exit(143);
        }
    });
    if ctrl_c {
        runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: exiting");
                agent::workspace::end_running_commands();
                std::process::exit(130);
            }
        });
    }
}

/// `bellows agent bench`: every task on a fresh copy, approval `auto`; exit 0 when every task
/// run is solved.
fn bench(b: &BenchArgs) -> anyhow::Result<i32> {
    let mut tasks = agent::bench::load_suite(&b.dir)?;
    if let Some(only) = &b.only {
        tasks.retain(|t| t.name.contains(only.as_str()));
    }
    let mut cfg = Config::new("", Policy::new(ApprovalMode::Auto));
    cfg.max_turns = b.max_turns;
    cfg.reply_reserve = reply_reserve(b.reply_reserve, u32::MAX);
    cfg.actions_per_turn = actions_per_turn(b.actions_per_turn, None);
    cfg.found_tests = !b.no_tests;
    cfg.restate = b.restate;
    cfg.say_first = b.say_first;
    cfg.long_files = long_files(b.long_file_lines, b.long_file_edits);
    cfg.own_check = b.own_check;
    cfg.wording_rules = !b.no_wording_rules;
    let llama = match b.engine.as_str() {
        "oracle" => None,
        _ => {
            let engine = b.model.load_with(
                Some(AGENT_MODEL),
                side_by_side(b.parallel, b.attempts, b.model.gpu_layers),
            )?;
            let profile = engine.profile();
            cfg.grammar = grammar_choice(b.grammar.as_deref(), profile.grammar);
            cfg.sampling = profile.sampling.clone();
            cfg.actions_per_turn = actions_per_turn(b.actions_per_turn, Some(profile));
            cfg.prompt_style = prompt_style(profile);
            cfg.protocol = protocol(b.protocol.as_deref(), profile);
            cfg.restate = restate(b.restate, b.no_restate, profile);
            cfg.reply_reserve = reply_reserve(b.reply_reserve, models::Engine::info(&engine).n_ctx);
            Some(engine)
        }
    };
    let mut bench = agent::bench::BenchConfig::new(cfg, b.sandbox.confinement());
    bench.keep = b.keep;
    bench.attempts = b.attempts;
    bench.no_check = b.no_check;
    announce(bench.confinement, Path::new("each task's temporary copy"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    exit_on_signal(&runtime, true);
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    // Where the bench is (task, attempt, turn, tokens, elapsed), on stderr.
    let progress = Progress::new();
    for (i, task) in tasks.iter().enumerate() {
        progress.task(i + 1, tasks.len(), &task.name);
        let mut view = progress.view(Box::new(agent::view::Quiet));
        let mut attempts = BenchAttempts(progress.clone());
        let result = match &llama {
            Some(engine) => runtime.block_on(agent::bench::run_task_watched(
                engine,
                task,
                &bench,
                &mut view,
                &mut attempts,
            ))?,
            None => match agent::bench::oracle_engine(task) {
                Ok(oracle) => runtime.block_on(agent::bench::run_task_watched(
                    &oracle,
                    task,
                    &bench,
                    &mut view,
                    &mut attempts,
                ))?,
                // The oracle replays a script: a task without one is not run, and said so.
                Err(agent::bench::BenchError::NoOracle(name)) => {
                    progress.suspend(|| eprintln!("{name}: skipped (no oracle.jsonl)"));
                    skipped.push(name);
                    continue;
                }
                Err(e) => return Err(e.into()),
            },
        };
        progress.suspend(|| {
            eprintln!(
                "{}: {} ({} turns, {} attempts, verify {})",
                task.name,
                result.stop(),
                result.turns,
                result.attempts,
                if result.verified { "ok" } else { "fails" }
            );
        });
        results.push(result);
    }
    progress.finish();
    print!("{}", agent::bench::report(&results));
    if !skipped.is_empty() {
        println!(
            "skipped {} tasks without oracle.jsonl: {}",
            skipped.len(),
            skipped.join(", ")
        );
    }
    Ok(i32::from(!results.iter().all(|r| r.solved())))
}

/// `--long-file-edits`' values.
fn long_edit(s: &str) -> Result<agent::whole::LongEdit, String> {
    agent::whole::LongEdit::parse(s).ok_or_else(|| {
        let all: Vec<&str> = agent::whole::LongEdit::ALL
            .iter()
            .map(|l| l.as_str())
            .collect();
        format!("one of {}", all.join(", "))
    })
}

/// `--long-file-lines` and `--long-file-edits` as the session's setting; 0 lines: none.
fn long_files(lines: usize, by: agent::whole::LongEdit) -> Option<agent::whole::LongFiles> {
    (lines > 0).then_some(agent::whole::LongFiles { over: lines, by })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        agent: AgentArgs,
    }

    fn parse(args: &[&str]) -> Result<AgentArgs, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("agent").chain(args.iter().copied())).map(|c| c.agent)
    }

    /// `--allow-run` patterns are parsed once, at start: a glued `*` is an error that says
    /// what to write instead; the sandbox flags reach the confinement.
    #[test]
    fn allow_run_patterns_and_sandbox_flags_are_checked_at_start() {
        let err = parse(&["task", "--allow-run", "cargo test*"]).expect_err("a glued *");
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(err.to_string().contains("write `cargo test *`"), "{err}");
        let a =
            parse(&["task", "--allow-run", "cargo test *", "--allow-run", "make"]).expect("parse");
        let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(a.run.allow_run[0].matches(&argv(&["cargo", "test", "-q"])));
        assert!(!a.run.allow_run[1].matches(&argv(&["make", "install"])));
        assert!(!a.run.sandbox.allow_net && !a.run.sandbox.unsandboxed_run);
        let a = parse(&["task", "--allow-net", "--unsandboxed-run"]).expect("parse");
        let expected = match agent::sandbox::probe() {
            agent::sandbox::Support::Landlock { .. } => Confinement::Landlock { allow_net: true },
            agent::sandbox::Support::Unavailable(_) => Confinement::Unconfined,
        };
        assert_eq!(a.run.sandbox.confinement(), expected);
        let Some(AgentCommand::Bench(b)) = parse(&["bench", "--unsandboxed-run"])
            .expect("parse")
            .command
        else {
            panic!("not bench");
        };
        assert!(b.sandbox.unsandboxed_run && !b.sandbox.allow_net);
    }

    /// `--restate` and `--no-restate`: the last given wins; neither, the profile decides.
    #[test]
    fn restate_follows_the_last_flag_given_else_the_profile() {
        let mut profile = models::Profile::generic();
        let decided = |args: &[&str], profile: &models::Profile| {
            let a = parse(args).expect("parse");
            restate(a.run.restate, a.run.no_restate, profile)
        };
        assert!(!decided(&["task"], &profile));
        assert!(decided(&["task", "--restate"], &profile));
        assert!(decided(&["task", "--no-restate", "--restate"], &profile));
        assert!(!decided(&["task", "--restate", "--no-restate"], &profile));
        profile.agent_restate = true;
        assert!(decided(&["task"], &profile));
        assert!(!decided(&["task", "--no-restate"], &profile));
    }

    /// `--attempts` takes a positive count, makes its own isolated copies (so neither
    /// `--isolate` nor `--resume` goes with it), and `--keep-attempts` needs it; the bench's
    /// `--attempts` and `--no-check` parse.
    #[test]
    fn attempts_run_side_by_side_by_default_only_on_a_gpu() {
        assert_eq!(side_by_side(None, 4, 0), 1, "one at a time on the CPU");
        assert_eq!(side_by_side(None, 4, 99), 4);
        assert_eq!(side_by_side(None, 8, 99), MAX_SIDE_BY_SIDE);
        assert_eq!(side_by_side(None, 2, 99), 2, "never more than there are");
        assert_eq!(side_by_side(Some(3), 4, 0), 3, "--parallel decides");
        assert_eq!(side_by_side(Some(6), 4, 0), 4);
        let a = parse(&["task", "--attempts", "4", "--parallel", "2"]).expect("parse");
        assert_eq!(a.run.parallel, Some(2));
        assert!(
            parse(&["task", "--parallel", "2"]).is_err(),
            "--parallel needs --attempts"
        );
    }

    #[test]
    fn attempts_flags_parse_and_conflict_where_they_should() {
        let a = parse(&["task", "--attempts", "4", "--keep-attempts"]).expect("parse");
        assert_eq!((a.run.attempts, a.run.keep_attempts), (Some(4), true));
        for bad in [
            &["task", "--attempts", "0"][..],
            &["task", "--attempts", "2", "--isolate"],
            &["--resume", "x", "--attempts", "2"],
            &["task", "--keep-attempts"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let Some(AgentCommand::Bench(b)) = parse(&["bench", "--attempts", "5", "--no-check"])
            .expect("parse")
            .command
        else {
            panic!("not bench");
        };
        assert_eq!((b.attempts, b.no_check), (5, true));
        let Some(AgentCommand::Bench(b)) = parse(&["bench"]).expect("parse").command else {
            panic!("not bench");
        };
        assert_eq!((b.attempts, b.no_check), (1, false));
        assert!(parse(&["bench", "--attempts", "0"]).is_err());
    }

    /// The bench runs by default as its figures were measured: 8 turns, 1024 tokens kept for a
    /// reply (less in a small context), and `--reply-reserve` wins over both.
    #[test]
    fn the_reply_reserve_fits_the_context_unless_given() {
        let Some(AgentCommand::Bench(b)) = parse(&["bench"]).expect("parse").command else {
            panic!("not bench");
        };
        assert_eq!((b.max_turns, b.reply_reserve), (8, None));
        assert_eq!(reply_reserve(None, 8192), 1024);
        assert_eq!(reply_reserve(None, 2048), 512);
        assert_eq!(reply_reserve(Some(300), 8192), 300);
        assert_eq!(reply_reserve(Some(4000), 2048), 4000);
    }

    /// A tuned profile's action limit and prompt style reach the agent unless a flag says
    /// otherwise.
    #[test]
    fn the_profiles_tuned_settings_are_the_agents_defaults() {
        let tuned = models::Profile::parse(
            "tuned",
            "[generation]\nactions_per_turn = 0\nprompt = \"example\"\n",
        )
        .expect("parse");
        assert_eq!(actions_per_turn(None, Some(&tuned)), usize::MAX);
        assert_eq!(actions_per_turn(Some(2), Some(&tuned)), 2);
        let one =
            models::Profile::parse("one", "[generation]\nactions_per_turn = 3\n").expect("parse");
        assert_eq!(actions_per_turn(None, Some(&one)), 3);
        assert_eq!(actions_per_turn(None, Some(&models::Profile::generic())), 1);
        assert_eq!(actions_per_turn(None, None), 1);
        assert_eq!(prompt_style(&tuned), codec::registry::PromptStyle::Example);
        assert_eq!(
            prompt_style(&models::Profile::generic()),
            codec::registry::PromptStyle::Full
        );
    }
}
