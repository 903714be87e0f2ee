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
    Eval(gateway::eval::EvalArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Eval(args) => gateway::eval::run(&args)?,
    }
    Ok(())
}
