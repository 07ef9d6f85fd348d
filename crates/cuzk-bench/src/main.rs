//! `cuzk-bench`: drives cuzk end to end and measures it.

mod batch;
mod compare;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-bench",
    version,
    about = "Benchmark client for the cuzk proving engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove N proofs with J in flight, verify each, print the batch summary.
    Batch(batch::BatchArgs),
    /// Our CPU prover against bellperson's on the same circuit, side by side.
    CompareCpu(compare::CompareArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CUZK_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Batch(args) => batch::run(args),
        Command::CompareCpu(args) => compare::run(args),
    }
}
