//! The `bellows` command line.

use clap::{Parser, Subcommand};

/// bellows: a local inference gateway and protocol codec for small language models.
#[derive(Debug, Parser)]
#[command(name = "bellows", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure the codec's conversion rate on a corpus of model replies (JSONL): converted
    /// replies, repairs and failures per kind, and false decodes and misses against gold.
    Eval(cli::eval::EvalArgs),
    /// Tune a model profile: sweep protocol, system prompt, grammar, temperature, actions per
    /// reply and tool presentation on live generations of a prompt set, pick the best by
    /// right-action rate, conversion, tokens per action and speed, report (table, HTML with an
    /// SVG chart) and, with --write, update the profile TOML with the settings and figures.
    Tune(cli::tune::TuneArgs),
    /// Serve an OpenAI-compatible HTTP endpoint (/v1/chat/completions, /v1/completions,
    /// /v1/models, /health, /metrics, /tokenize) on a local GGUF model, turning the model's
    /// tool calls into valid, streamed `tool_calls`. Stops cleanly on SIGINT/SIGTERM.
    Serve(gateway::config::ServeArgs),
    /// Run the coding agent on a task in a repository (in-process model, offline; without
    /// --model, qwen-coder-1.5b, fetched on first use): `bellows agent "TASK" --repo DIR`, and
    /// `bellows agent undo [ID] [--steps N]`.
    Agent(cli::agent_cmd::AgentArgs),
    /// List the devices llama.cpp's back ends found in this binary (the CPU, and GPUs where the
    /// binary was built with `cuda`, `vulkan` or `metal`): where `--gpu-layers` can put layers.
    Devices,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Eval(args) => {
            quiet_logs();
            cli::eval::run(&args)?
        }
        Command::Tune(args) => {
            quiet_logs();
            cli::tune::run(&args)?
        }
        Command::Serve(args) => serve(&args)?,
        Command::Devices => {
            quiet_logs();
            devices()?
        }
        Command::Agent(args) => {
            // llama.cpp logs through tracing; only warnings reach the terminal here.
            let filter = tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .init();
            let code = cli::agent_cmd::run(&args)?;
            if code != 0 {
                std::process::exit(code);
            }
        }
    }
    Ok(())
}

/// `bellows devices`: one line per device, then whether `--gpu-layers` can offload here.
fn devices() -> anyhow::Result<()> {
    models::llama::backend()?;
    let devices = models::gpu::devices();
    for d in &devices {
        let kind = if d.is_offload_target() { "GPU" } else { "   " };
        println!("{kind}  {:<8} {d}", d.backend);
    }
    let plan = models::gpu::Offload::plan(99, models::gpu::BUILT_BACKENDS, &devices);
    if let Some(mut why) = plan.why_cpu() {
        why[..1].make_ascii_uppercase();
        println!("{why}");
    } else {
        println!("--gpu-layers N offloads up to N layers to the GPU devices above");
    }
    Ok(())
}

/// Commands with their own output: only warnings reach the terminal (RUST_LOG overrides).
fn quiet_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// `bellows serve`: logs through `tracing`. RUST_LOG overrides the default, which is `info`
/// for bellows and `warn` for llama.cpp (whose `info` lines list every GGUF key at load).
fn serve(args: &gateway::config::ServeArgs) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,llama-cpp-2=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
    let cfg = args.resolve()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(gateway::serve::run(cfg))?;
    Ok(())
}
