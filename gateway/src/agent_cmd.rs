//! `bellows agent`: command-line flags, loading the model as `serve` does, and handing an
//! engine to the `agent` crate's loop (which knows nothing of llama.cpp).

use std::path::PathBuf;
use std::time::Duration;

use agent::policy::TerminalApprover;
use agent::view::{JsonLines, Terminal};
use agent::{ApprovalMode, Config, GrammarChoice, Policy, StopReason, View, Workspace};
use models::{GrammarMode, LlamaEngine, LoadOptions};

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
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// What to do, in plain words.
    pub task: Option<String>,
    /// The repository to work in; every path the model names is confined to it.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// GGUF file or known model name (`smollm2`, `gemma3`, `tiny`), as for `serve`.
    #[arg(long, short = 'm', env = "BELLOWS_MODEL", value_name = "PATH|NAME")]
    pub model: Option<String>,
    /// Model profile (name or .toml path); default: selected by the GGUF.
    #[arg(long, env = "BELLOWS_PROFILE")]
    pub profile: Option<String>,
    /// Context size in tokens; default: the profile's, else 4096.
    #[arg(long, env = "BELLOWS_CTX")]
    pub ctx: Option<u32>,
    /// CPU threads; default: all available cores.
    #[arg(long, env = "BELLOWS_THREADS")]
    pub threads: Option<u32>,
    /// Layers offloaded to the GPU (GPU builds only). Default: 0.
    #[arg(long, env = "BELLOWS_GPU_LAYERS", default_value_t = 0)]
    pub gpu_layers: u32,
    /// plan (read-only), ask (every change and command), edits (edits automatic, commands
    /// ask), auto (everything inside the repository). Default: ask on a terminal, else plan.
    #[arg(long, value_parser = ["plan", "ask", "edits", "auto"])]
    pub approval: Option<String>,
    /// Commands `edits` mode runs unasked: the quoted argv, `*` at the end matching any rest
    /// (repeatable), e.g. `--allow-run 'cargo test*'`.
    #[arg(long, value_name = "PATTERN")]
    pub allow_run: Vec<String>,
    /// off, lazy (switches on at a verb) or strict (every reply decodes). Default: the
    /// profile's grammar mode.
    #[arg(long, value_parser = ["off", "lazy", "strict"])]
    pub grammar: Option<String>,
    #[arg(long, default_value_t = 30)]
    pub max_turns: u32,
    /// Generation stops once this many actions are decoded in a turn.
    #[arg(long, default_value_t = 1)]
    pub actions_per_turn: usize,
    /// Command (POSIX quoting, no shell) that must pass after DONE; a failure is fed back.
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
    /// Tokens kept free for each reply (its max_tokens).
    #[arg(long, default_value_t = 512)]
    pub reply_reserve: u32,
    /// Seconds a RUN may take before it is killed.
    #[arg(long, default_value_t = 60)]
    pub run_timeout: u64,
    /// One JSON event per line on stdout instead of the readable view.
    #[arg(long)]
    pub json: bool,
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
    let task = a
        .task
        .clone()
        .ok_or_else(|| anyhow::anyhow!("a TASK is required: bellows agent \"TASK\""))?;
    let mut ws = Workspace::new(&a.repo)?;
    ws.run_timeout = Duration::from_secs(a.run_timeout);
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mode = match a.approval.as_deref() {
        Some(m) => ApprovalMode::parse(m).unwrap_or(ApprovalMode::Plan),
        None if terminal => ApprovalMode::Ask,
        None => ApprovalMode::Plan,
    };
    let path = crate::serve::resolve_model(a.model.as_deref())?;
    let mut opts = LoadOptions::new(path);
    opts.gpu_layers = a.gpu_layers;
    opts.threads = a.threads;
    opts.n_ctx = a.ctx;
    opts.profile = a.profile.clone();
    let engine = LlamaEngine::load(opts)?;
    let profile = engine.profile();
    let grammar = match a.grammar.as_deref() {
        Some(g) => GrammarChoice::parse(g).unwrap_or(GrammarChoice::Off),
        None => match profile.grammar {
            GrammarMode::Off => GrammarChoice::Off,
            GrammarMode::Lazy => GrammarChoice::Lazy,
            GrammarMode::Strict => GrammarChoice::Strict,
        },
    };
    let mut policy = Policy::new(mode);
    policy.allow_run = a.allow_run.clone();
    let mut cfg = Config::new(&task, policy);
    cfg.grammar = grammar;
    cfg.sampling = profile.sampling.clone();
    cfg.max_turns = a.max_turns;
    cfg.actions_per_turn = a.actions_per_turn;
    cfg.verify = match &a.verify {
        Some(v) => Some(
            codec::registry::split_argv(v).map_err(|e| anyhow::anyhow!("--verify {v:?}: {e:?}"))?,
        ),
        None => None,
    };
    cfg.stall_turns = a.stall_turns;
    cfg.loop_repeats = a.loop_repeats;
    cfg.token_budget = a.token_budget;
    cfg.reply_reserve = a.reply_reserve;
    let mut view: Box<dyn View> = if a.json {
        Box::new(JsonLines)
    } else {
        Box::new(Terminal)
    };
    let mut approver = TerminalApprover;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(agent::run(&engine, &ws, &cfg, &mut approver, view.as_mut()))?;
    Ok(match outcome.reason {
        StopReason::Done | StopReason::Verified => 0,
        _ => 1,
    })
}
