//! `cuzk-ctl`: the operator's tool (docs/OPERATING.md): check a host before
//! it proves, ask a daemon for its state, load circuits ahead, read its
//! metrics, draw its timeline.

use clap::{Parser, Subcommand};
use cuzk_ctl::{admin, daemon::DaemonArgs, doctor, timeline};

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-ctl",
    version,
    about = "Operator's tool for the cuzk proving daemon"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check this host before proving (GPUs, VRAM, huge pages, memory
    /// budget, parameter files, the daemon) and say what to fix.
    Doctor(doctor::DoctorArgs),
    /// The daemon's devices, parameters and queues.
    Status(DaemonArgs),
    /// Load a circuit's parameters ahead of its first request (a Curio
    /// name such as porep-32g, or a circuit id).
    Preload {
        #[command(flatten)]
        daemon: DaemonArgs,
        /// Circuit id.
        #[arg(long)]
        circuit_id: String,
    },
    /// The daemon's Prometheus metrics.
    Metrics(DaemonArgs),
    /// Draw a log's TIMELINE events as an SVG chart (one row per worker).
    Timeline(timeline::TimelineArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CUZK_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let command = match Cli::parse().command {
        Command::Timeline(args) => return timeline::run(args),
        other => other,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        match command {
            Command::Status(daemon) => admin::status(daemon).await,
            Command::Preload { daemon, circuit_id } => admin::preload(daemon, circuit_id).await,
            Command::Metrics(daemon) => admin::metrics(daemon).await,
            Command::Doctor(args) => {
                // A failed check is an answer, not an error: exit 1
                // without an error trace.
                if !doctor::run(args).await? {
                    std::process::exit(1);
                }
                Ok(())
            }
            Command::Timeline(_) => unreachable!("handled above"),
        }
    })
}
