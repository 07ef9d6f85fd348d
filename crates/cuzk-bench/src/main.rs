//! `cuzk-bench`: drives cuzk end to end and measures it, and generates
//! what the measurements need (parameters, fixtures, requests). The
//! operator's commands (doctor, status, preload, metrics, timeline) are
//! `cuzk-ctl`'s.

mod batch;
mod bellperson_synthesis;
mod client;
mod cluster;
mod cold_start;
mod compare;
mod fixtures;
mod gen;
mod gpu;
mod gpu_paths;
mod observe;
mod params;
mod real_c2;
mod real_inputs;
mod real_synthesis;
mod report;
mod supraseal;
mod synthesis;

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
    /// One proof, with its details.
    Single(batch::ProofArgs),
    /// Prove N proofs with J in flight, check each, print the batch summary.
    Batch(batch::BatchArgs),
    /// Our CPU prover against bellperson's on the same circuit, side by side.
    CompareCpu(compare::CompareArgs),
    /// GPU partition prove time at full scale, optionally beside supraseal-c2.
    GpuBench(gpu::BenchArgs),
    /// A WindowPoSt partition's inclusion paths finished on the GPU beside
    /// the host's writer (random values of the 32 GiB tree's shape).
    GpuPaths(gpu_paths::GpuPathsArgs),
    /// Write a synthetic parameter file of a production shape (streamed).
    GenSrs(gen::GenArgs),
    /// Seal a sector on the CPU; write real C1/PoSt/SnapDeals request files.
    Fixtures(fixtures::FixturesArgs),
    /// Generate test-size Filecoin parameters under their official names.
    GenParams(params::GenParamsArgs),
    /// A PoRep partition's synthesis by cuzk against bellperson's, side by side.
    CompareSynthesis(synthesis::CompareSynthesisArgs),
    /// Write requests of production sectors' exact structure (random values,
    /// no sealing) for `single` / `batch`: porep-32g, window-post-32g, ...
    RealInputs(real_inputs::RealInputsArgs),
    /// The cluster queue's coordination cost: simulated daemons drain a
    /// PostgreSQL job queue (claim, wait, finish), 1 to 64 of them.
    ClusterClaims(cluster::ClusterClaimsArgs),
    /// One real partition's host side at full size (circuit build, compiled
    /// R1CS, witness, a/b/c, synthesis), its input made in memory: one JSON line.
    RealSynthesis(real_synthesis::RealSynthesisArgs),
    /// Time from a daemon's start to its first proof: spawns cuzk-daemon
    /// with a config, submits one request (the `single` flags), reports
    /// `time_to_first_proof_s` and the setup phases.
    ColdStart(cold_start::ColdStartArgs),
    /// Whole real-circuit proofs (32 GiB PoRep C2) through the embedded
    /// engine on the GPUs, parameters of the circuit's sizes made in memory.
    RealC2(real_c2::RealC2Args),
}

fn main() -> anyhow::Result<()> {
    let command = Cli::parse().command;
    // These capture bellperson's `log` records themselves.
    let command = match command {
        Command::CompareSynthesis(args) => return synthesis::run(args),
        Command::RealSynthesis(args) => return real_synthesis::run(args),
        other => other,
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CUZK_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let command = match command {
        Command::CompareCpu(args) => return compare::run(args),
        Command::GpuBench(args) => return gpu::bench(args),
        Command::GpuPaths(args) => return gpu_paths::run(args),
        Command::GenSrs(args) => return gen::run(args),
        Command::Fixtures(args) => return fixtures::run(args),
        Command::GenParams(args) => return params::run(args),
        Command::RealInputs(args) => return real_inputs::run(args),
        Command::RealC2(args) => return real_c2::run(args),
        Command::ClusterClaims(args) => return cluster::run(args),
        other => other,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        match command {
            Command::Single(args) => batch::single(args).await,
            Command::ColdStart(args) => cold_start::run(args).await,
            Command::Batch(args) => batch::run(args).await,
            Command::CompareCpu(_)
            | Command::GpuBench(_)
            | Command::GpuPaths(_)
            | Command::GenSrs(_)
            | Command::Fixtures(_)
            | Command::GenParams(_)
            | Command::CompareSynthesis(_)
            | Command::RealInputs(_)
            | Command::RealSynthesis(_)
            | Command::RealC2(_)
            | Command::ClusterClaims(_) => unreachable!("handled above"),
        }
    })
}
