//! `cuzk-bench real-c2`: whole real-circuit proofs (a 32 GiB PoRep C2 by
//! default) through the embedded engine on the GPUs, from real-structure
//! inputs (`cuzk_filecoin::structure`), with parameters of the real
//! circuit's section sizes made in memory (random points: such proofs
//! cannot verify, so the plan source allows unverifiable requests, as
//! `[benchmark] allow_unverifiable` does).
//!
//! The circuit's R1CS is recorded first (by the plan's own witness-only
//! synthesis of partition 0, into the process's `R1csCache`, where the
//! engine then finds it), its counts give the parameters' section sizes,
//! then each pass of `--passes` runs: its proofs submitted at once and
//! timed through an engine of its own (the parameters made again for it,
//! the recorded R1CS shared). `witness` synthesises only the witness (a, b,
//! c on the device), `host` computes a, b, c on the host (the side-by-side
//! run): `--passes witness:3,host:1`. Prints one JSON line per pass: setup
//! times, s/proof, GPU busy, peak RSS, the budget and the per-partition
//! bytes in flight.

use anyhow::{bail, Context};
use clap::Args;
use cuzk_core::backend::{CudaBackend, Fallback, Residency, Tuning};
use cuzk_core::shaped::{parameters_of_shape, Shape};
use cuzk_core::{
    CpuBackend, ParameterRecipe, PartitionData, PlanError, PlanSource, ProofPlan, ProofRequest,
    ProverBackend, ProvingParameters,
};
use cuzk_engine::{Engine, EngineConfig, JobStatus};
use cuzk_filecoin::structure::{generate, StructureSpec};
use cuzk_filecoin::FilecoinPlans;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct RealC2Args {
    /// The real-structure input (see `real-inputs`): porep-32g, porep-64g,
    /// window-post-32g, snap-32g, ...
    #[arg(long = "proof", default_value = "porep-32g", value_parser = parse_spec)]
    spec: StructureSpec,
    /// The passes, in order, each `witness` (a, b, c on the device) or
    /// `host` (a, b, c on the host), with the proofs it submits at once:
    /// `witness:3,host:1` (a bare name: one proof); `@N` sets a pass's
    /// sequential slots (`witness:3@2,witness:3@14`); a `-gadgets` name
    /// (`witness-gadgets:3`) computes every witness through the circuit's
    /// gadgets, native writers left aside (the side-by-side run);
    /// `witness-paths` has PoSt witnesses leave their paths to the device.
    #[arg(long, value_delimiter = ',', default_value = "witness", value_parser = parse_pass)]
    passes: Vec<Pass>,
    /// The engine's memory budget: parameters (about 47 GiB at 32 GiB),
    /// R1CS and partitions in flight.
    #[arg(long, default_value_t = 118)]
    memory_budget_gib: u64,
    /// Synthesis workers (default: every core but two).
    #[arg(long)]
    partition_workers: Option<usize>,
    /// Prover workers per GPU.
    #[arg(long, default_value_t = 2)]
    prover_workers: usize,
    /// Synthesis workers that compute at once (sequential slots; default:
    /// the daemon's, one per eight cores).
    #[arg(long)]
    sequential_slots: Option<usize>,
    /// Threads of the pool (default: the cores the slots leave, as the
    /// daemon does; every core plus the slots reproduces the
    /// oversubscribed split of earlier runs).
    #[arg(long)]
    pool_threads: Option<usize>,
    /// Also write the passes' figures as a JSON report (docs/bench/SCHEMA.md).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

fn parse_spec(s: &str) -> Result<StructureSpec, String> {
    s.parse().map_err(|e: cuzk_core::PlanError| e.to_string())
}

/// One pass of proofs through an engine of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    /// Witness-only partitions (a, b, c on the device).
    witness_only: bool,
    /// Proofs submitted at once.
    count: usize,
    /// Sequential slots of this pass (`None`: `--sequential-slots`).
    slots: Option<usize>,
    /// Witnesses through the gadgets even where a native writer exists.
    gadgets: bool,
    /// PoSt witnesses leave their paths to the device
    /// (`[gpus] post_paths_on_device`).
    paths_on_device: bool,
}

/// `witness:3@2`: the witness path, 3 proofs at once, 2 sequential slots
/// (the pool is the process's, so passes differing in slots alone compare
/// the split side by side).
fn parse_pass(s: &str) -> Result<Pass, String> {
    let (pass, slots) = match s.split_once('@') {
        Some((pass, slots)) => {
            let slots = slots
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{s:?}: the slots after @ must be a number of at least 1"))?;
            (pass, Some(slots))
        }
        None => (s, None),
    };
    let (name, count) = pass.split_once(':').unwrap_or((pass, "1"));
    let (name, gadgets) = match name.strip_suffix("-gadgets") {
        Some(name) => (name, true),
        None => (name, false),
    };
    let (witness_only, paths_on_device) = match name {
        "witness" => (true, false),
        "witness-paths" => (true, true),
        "host" => (false, false),
        other => {
            return Err(format!(
                "unknown pass {other:?} (witness, witness-paths or host, each with -gadgets or not)"
            ))
        }
    };
    let count = count
        .parse::<usize>()
        .ok()
        .filter(|&c| c > 0)
        .ok_or_else(|| format!("{s:?}: the count must be a number of at least 1"))?;
    Ok(Pass {
        witness_only,
        count,
        slots,
        gadgets,
        paths_on_device,
    })
}

/// Parameters made in memory, handed to the engine once.
#[derive(Debug)]
struct InMemory(Arc<Mutex<Option<ProvingParameters>>>);

impl ParameterRecipe for InMemory {
    fn check_available(&self) -> Result<(), PlanError> {
        Ok(())
    }

    fn load(&self) -> Result<ProvingParameters, PlanError> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PlanError::Parameters("the in-memory parameters were already loaded".into()))
    }

    /// Already in memory: loading them takes nothing more.
    fn memory_bytes(&self) -> u64 {
        0
    }
}

/// The Filecoin plans, with the in-memory parameters for one circuit id.
#[derive(Debug)]
struct BenchSource {
    plans: FilecoinPlans,
    circuit_id: String,
    params: Arc<Mutex<Option<ProvingParameters>>>,
}

impl PlanSource for BenchSource {
    fn name(&self) -> &'static str {
        "real-c2 bench"
    }

    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        self.plans.plan(request)
    }

    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        (circuit_id == self.circuit_id)
            .then(|| Ok(Box::new(InMemory(Arc::clone(&self.params))) as Box<dyn ParameterRecipe>))
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.plans.counters()
    }

    fn r1cs_cache(&self) -> Option<Arc<cuzk_core::R1csCache>> {
        self.plans.r1cs_cache()
    }

    fn held_bytes(&self) -> u64 {
        self.plans.held_bytes()
    }

    fn release(&self, idle: std::time::Duration) -> u64 {
        self.plans.release(idle)
    }
}

/// This process's peak resident set (VmHWM), bytes.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Seconds the GPUs spent in CUDA regions, from the engine's metrics.
fn gpu_busy_seconds(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("cuzk_gpu_busy_seconds"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |a, b| a + b)
}

pub fn run(args: RealC2Args) -> anyhow::Result<()> {
    let report = crate::report::start("real-c2", args.json.as_deref());
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let slots = args
        .sequential_slots
        .unwrap_or_else(|| cuzk_core::cores::default_sequential_slots(cores));
    let pool = args
        .pool_threads
        .unwrap_or_else(|| cuzk_core::cores::pool_threads(cores, slots));
    rayon::ThreadPoolBuilder::new().num_threads(pool).build_global()?;
    eprintln!("cores {cores}: {slots} sequential slots, pool of {pool} threads");
    // No parameter file is read (the bench source serves its own), but the
    // Filecoin source wants a directory.
    let dir = std::env::temp_dir().join("cuzk-real-c2");
    let (request, plan) = generated_request_and_plan(&args.spec, &dir)?;
    let circuit_id = plan.circuit_id();

    // The R1CS, recorded as the engine's synthesis would (and kept in the
    // process's cache for it), with partition 0's witness timed.
    let started = Instant::now();
    let PartitionData::Witness(first) = plan.synthesize_witness(0)? else {
        bail!("{circuit_id} has no witness-only form (CUZK_R1CS=off?)");
    };
    let record_and_witness = started.elapsed();
    let r1cs = Arc::clone(&first.r1cs);
    let witness_bytes = first.witness.heap_bytes();
    drop(first);
    let shape = shape_of(&r1cs);
    eprintln!(
        "{circuit_id}: R1CS + partition 0 witness {:.1}s ({} constraints, {} nonzeros, {} MiB)",
        record_and_witness.as_secs_f64(),
        r1cs.num_constraints(),
        r1cs.nonzeros(),
        r1cs.memory_bytes() >> 20,
    );
    drop(r1cs);
    let setup = Setup {
        request,
        circuit_id,
        shape,
        record_and_witness,
        witness_bytes,
        partitions: plan.partitions(),
        witness_path_bytes: plan.witness_bytes().unwrap_or_else(|| plan.partition_bytes()),
        host_path_bytes: plan.partition_bytes(),
    };
    drop(plan);
    let mut passes = Vec::new();
    for pass in &args.passes {
        passes.push(run_pass(
            &args,
            &setup,
            plans_for_generated(&dir)
                .with_gadget_witness(pass.gadgets)
                .with_paths_on_device(pass.paths_on_device),
            *pass,
        )?);
    }
    report.write(&serde_json::json!({ "passes": passes }))
}

/// The Filecoin plans for a generated input (`--real`, real-c2): parameter
/// files in `dir`, the environment's settings, and proofs that cannot
/// verify allowed (a generated input's vanilla proofs do not: see
/// `cuzk_filecoin::structure`).
fn plans_for_generated(dir: &Path) -> FilecoinPlans {
    FilecoinPlans::new(dir.to_path_buf())
        .with_environment()
        .with_allow_unverifiable(true)
}

/// The request `spec` generates and its plan ([`plans_for_generated`],
/// `dir` created first).
pub(crate) fn generated_request_and_plan(
    spec: &StructureSpec,
    dir: &Path,
) -> anyhow::Result<(ProofRequest, Box<dyn ProofPlan>)> {
    std::fs::create_dir_all(dir)?;
    let request = generate(spec)?.proof_request()?;
    let plan = plans_for_generated(dir)
        .plan(&request)
        .context("not a Filecoin request")??;
    Ok((request, plan))
}

/// The parameter sections a circuit of this R1CS needs.
pub(crate) fn shape_of(r1cs: &cuzk_core::CompiledR1cs) -> Shape {
    let (a_aux, b_inputs, b_aux) = r1cs.densities();
    let domain = r1cs.num_constraints().next_power_of_two();
    Shape {
        constraints: r1cs.num_constraints(),
        inputs: r1cs.num_inputs(),
        h: domain - 1,
        l: r1cs.num_aux(),
        a: r1cs.num_inputs() + a_aux.count_ones(),
        b: b_inputs.count_ones() + b_aux.count_ones(),
    }
}

/// What every pass shares: the request and its circuit's recorded shape.
struct Setup {
    request: ProofRequest,
    circuit_id: String,
    shape: Shape,
    record_and_witness: Duration,
    witness_bytes: u64,
    partitions: usize,
    witness_path_bytes: u64,
    host_path_bytes: u64,
}

/// Runs one pass; prints its figures as a JSON line and returns them.
fn run_pass(
    args: &RealC2Args,
    setup: &Setup,
    plans: FilecoinPlans,
    pass: Pass,
) -> anyhow::Result<serde_json::Value> {
    let witness = time_one_witness(&plans, setup)?;
    // Each pass's peak is its own (where the kernel lets it be reset).
    let peak_reset = crate::real_synthesis::reset_peak_rss();
    let started = Instant::now();
    let params = parameters_of_shape(&setup.shape, 1);
    let params_time = started.elapsed();
    let params_bytes = params.size_bytes();
    eprintln!(
        "pass {pass:?}: parameters {:.1}s ({} MiB)",
        params_time.as_secs_f64(),
        params_bytes >> 20
    );

    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let config = EngineConfig {
        partition_workers: args.partition_workers.unwrap_or(cores.saturating_sub(2).max(1)),
        sequential_slots: pass
            .slots
            .or(args.sequential_slots)
            .unwrap_or_else(|| cuzk_core::cores::default_sequential_slots(cores)),
        workers_per_backend: args.prover_workers,
        max_prover_queue_depth: 2,
        memory_budget: args.memory_budget_gib << 30,
        witness_only: pass.witness_only,
        ..EngineConfig::default()
    };
    let sequential_slots = config.sequential_slots;
    let backends: Vec<Arc<dyn ProverBackend>> = CudaBackend::detect_capped(
        &[],
        Residency::Auto,
        Tuning::default(),
        cuzk_daemon::config::memory_cap_from_env(),
    )
    .into_iter()
    .map(|gpu| Arc::new(Fallback::new(Arc::new(gpu), Arc::new(CpuBackend))) as Arc<dyn ProverBackend>)
    .collect();
    if backends.is_empty() {
        // The engine proves on the CPU then (and synthesises in full: the
        // CPU backend does not take witness-only partitions).
        eprintln!("no CUDA device (or a build without --features cuda): proving on the CPU");
    }
    let source = BenchSource {
        plans,
        circuit_id: setup.circuit_id.clone(),
        params: Arc::new(Mutex::new(Some(params))),
    };
    // What the engine budgets: witness-only partitions need a backend
    // that takes them (the GPU).
    let witness_path = pass.witness_only && !backends.is_empty();
    let partition_bytes = match witness_path {
        true => setup.witness_path_bytes,
        false => setup.host_path_bytes,
    };
    let engine = Engine::start(config, backends, vec![Arc::new(source)])?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // Counted from before the first submission: the engine starts on a
    // job's partitions as soon as it is submitted.
    let (natives, fallbacks) = (
        cuzk_filecoin::plans::native_witnesses(),
        cuzk_filecoin::plans::native_fallbacks(),
    );
    let started = Instant::now();
    let jobs: Vec<String> = (0..pass.count)
        .map(|k| {
            let mut request = setup.request.clone();
            request.request_id = format!("real-c2-{}-{k}", if witness_path { "witness" } else { "host" });
            engine.submit(request).map(|outcome| outcome.job_id)
        })
        .collect::<Result<_, _>>()?;
    let mut finished = Vec::new();
    for job in &jobs {
        let result = runtime.block_on(engine.wait(job, Some(Duration::from_secs(3600))))?;
        if result.status != JobStatus::Completed {
            bail!("{job}: {:?}: {}", result.status, result.error);
        }
        finished.push((started.elapsed(), result));
    }
    let wall = started.elapsed();
    let natives = cuzk_filecoin::plans::native_witnesses() - natives;
    let fallbacks = cuzk_filecoin::plans::native_fallbacks() - fallbacks;
    let busy = gpu_busy_seconds(&engine.metrics_text());
    let synthesis: f64 = finished.iter().map(|(_, r)| r.synthesis.as_secs_f64()).sum();
    let status = engine.status();
    let r1cs_bytes: u64 = status.compiled_r1cs.iter().map(|e| e.bytes).sum();
    engine.shutdown(Duration::from_secs(10));
    let figures = serde_json::json!({
            "proof": args.spec.kind.name(),
            "sector_size": args.spec.sector_size,
            "circuit_id": setup.circuit_id,
            "witness_only": witness_path,
            "paths_on_device": pass.paths_on_device,
            "witness_generator": generator(natives, (pass.count * setup.partitions) as u64),
            "witness_generator_alone": witness.generator,
            "native_fallbacks": fallbacks,
            "witness_core_seconds_per_partition": witness.core_seconds,
            "witness_wall_s_per_partition": witness.wall_s,
            "count": pass.count,
            "partitions": setup.partitions,
            "constraints": setup.shape.constraints,
            "record_and_first_witness_s": setup.record_and_witness.as_secs_f64(),
            "parameters_s": params_time.as_secs_f64(),
            "parameters_bytes": params_bytes,
            "compiled_r1cs_bytes": r1cs_bytes,
            "witness_bytes_partition0": setup.witness_bytes,
            "budgeted_bytes_per_partition": partition_bytes,
            "memory_budget_bytes": args.memory_budget_gib << 30,
            "pool_threads": rayon::current_num_threads(),
            "sequential_slots": sequential_slots,
            "wall_s": wall.as_secs_f64(),
            "s_per_proof": wall.as_secs_f64() / pass.count as f64,
            "first_proof_s": finished[0].0.as_secs_f64(),
            "steady_s_per_proof": steady_seconds_per_proof(&finished.iter().map(|(t, _)| *t).collect::<Vec<_>>()),
            "gpu_busy_s": busy,
            "gpu_busy_fraction": busy / wall.as_secs_f64(),
            "synthesis_partition_s_sum": synthesis,
            "peak_rss_bytes": peak_rss(),
            "peak_rss_of_this_pass": peak_reset,
    });
    println!("{figures}");
    Ok(figures)
}

/// One partition's witness timed alone, before the pass's engine starts
/// (nothing else runs in the process then, so its CPU time is the
/// witness's core-seconds).
struct WitnessAlone {
    generator: &'static str,
    core_seconds: f64,
    wall_s: f64,
}

/// Partition 0's witness through `plans` (the R1CS is already recorded),
/// self-check included, as the engine computes it.
fn time_one_witness(plans: &FilecoinPlans, setup: &Setup) -> anyhow::Result<WitnessAlone> {
    let plan = plans.plan(&setup.request).context("not a Filecoin request")??;
    let natives = cuzk_filecoin::plans::native_witnesses();
    let (started, cpu) = (Instant::now(), crate::real_synthesis::cpu_seconds());
    let data = plan.synthesize_witness(0)?;
    let (wall_s, core_seconds) = (
        started.elapsed().as_secs_f64(),
        crate::real_synthesis::cpu_seconds() - cpu,
    );
    drop(data);
    let generator = generator(cuzk_filecoin::plans::native_witnesses() - natives, 1);
    eprintln!("one witness alone ({generator}): {wall_s:.2} s wall, {core_seconds:.1} core-s");
    Ok(WitnessAlone {
        generator,
        core_seconds,
        wall_s,
    })
}

/// `native` when all `of` witnesses were written natively, `gadgets` when
/// none was, `mixed` otherwise.
fn generator(native: u64, of: u64) -> &'static str {
    match native {
        0 => "gadgets",
        n if n >= of => "native",
        _ => "mixed",
    }
}

/// Seconds between completions after the first (`None` for one proof):
/// the rate once the pipeline is full.
fn steady_seconds_per_proof(completions: &[Duration]) -> Option<f64> {
    let (first, last) = (completions.first()?, completions.last()?);
    (completions.len() > 1).then(|| (*last - *first).as_secs_f64() / (completions.len() - 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_parse_with_slots_and_generator() {
        let pass = parse_pass("witness-gadgets:3@2").unwrap();
        assert_eq!(
            pass,
            Pass {
                witness_only: true,
                count: 3,
                slots: Some(2),
                gadgets: true,
                paths_on_device: false,
            }
        );
        assert!(!parse_pass("host").unwrap().gadgets);
        let paths = parse_pass("witness-paths:2").unwrap();
        assert!(paths.witness_only && paths.paths_on_device && paths.count == 2);
        assert!(parse_pass("gadgets:1").is_err() && parse_pass("witness:0").is_err());
    }

    #[test]
    fn steady_rate_is_between_completions_after_the_first() {
        let at = |s: &[u64]| s.iter().map(|&s| Duration::from_secs(s)).collect::<Vec<_>>();
        assert_eq!(steady_seconds_per_proof(&at(&[40])), None);
        assert_eq!(steady_seconds_per_proof(&at(&[40, 55, 70, 85])), Some(15.0));
        assert_eq!(generator(0, 10), "gadgets");
        assert_eq!(generator(10, 10), "native");
        assert_eq!(generator(3, 10), "mixed");
    }
}
