//! `cuzk-bench batch`: the seed's batch benchmark, in process for now.

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use cuzk_core::{
    finish, prove_start, synthesize, CacheOutcome, ParameterCache, ProveTimings, ProvingParameters,
    Randomness, Scalar, SyntheticCircuit, Verifier,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Proof types the bench can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProofType {
    /// The PoRep-shaped synthetic circuit (`--log2` / `--constraints`).
    Synthetic,
}

#[derive(Args, Debug)]
pub struct BatchArgs {
    /// Run the prover in this process (the daemon arrives with issue 3).
    #[arg(long)]
    embedded: bool,
    /// What to prove.
    #[arg(long = "type", value_enum, default_value_t = ProofType::Synthetic)]
    proof_type: ProofType,
    /// Circuit size as a power of two (total constraints = 2^K).
    #[arg(long, default_value_t = 16)]
    log2: u32,
    /// Exact constraint count, overriding --log2 (non-powers of two welcome).
    #[arg(long)]
    constraints: Option<usize>,
    /// Public inputs of the synthetic circuit.
    #[arg(long, default_value_t = 2)]
    inputs: usize,
    /// Number of proofs.
    #[arg(long, default_value_t = 1)]
    count: usize,
    /// Proofs in flight at once.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Parameter cache directory (default: $CUZK_PARAM_CACHE or ~/.cache/cuzk/params).
    #[arg(long)]
    param_cache: Option<PathBuf>,
}

/// What happened to one proof.
struct JobReport {
    index: usize,
    wall: Duration,
    queue: Duration,
    synthesis: Duration,
    prove: Duration,
    timings: ProveTimings,
    outcome: Result<(), String>,
}

pub fn run(args: BatchArgs) -> anyhow::Result<()> {
    if !args.embedded {
        bail!("only --embedded is available until the daemon exists; run with --embedded");
    }
    if args.count == 0 || args.concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    if args.log2 > 30 {
        bail!("--log2 {} is beyond what the CPU prover can hold", args.log2);
    }
    let constraints = args.constraints.unwrap_or(1usize << args.log2);
    let inputs: Vec<Scalar> = (0..args.inputs).map(|i| Scalar::from(i as u64 + 1)).collect();
    let template = SyntheticCircuit::new(constraints, inputs.clone(), 0).map_err(anyhow::Error::msg)?;

    let cache_dir = args
        .param_cache
        .clone()
        .unwrap_or_else(ParameterCache::default_dir);
    let cache = ParameterCache::new(&cache_dir)?;
    let id = template.circuit_id();
    let (params, outcome) = cache
        .load_or_generate(&id, || template.clone())
        .with_context(|| format!("parameters for {id}"))?;
    let path = cache.params_path(&id);
    match outcome {
        CacheOutcome::Generated(t) => println!(
            "parameters:  generated in {:.1}s -> {}",
            t.as_secs_f64(),
            path.display()
        ),
        CacheOutcome::Loaded(t) => println!(
            "parameters:  loaded in {:.1}s from {}",
            t.as_secs_f64(),
            path.display()
        ),
    }
    let params = Arc::new(params);
    let verifier = Arc::new(Verifier::new(&params.vk));

    println!("=== Batch Benchmark ===");
    println!(
        "proof type:  {}",
        args.proof_type
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    );
    println!("constraints: {constraints}");
    println!("count:       {}", args.count);
    println!("concurrency: {}", args.concurrency);
    println!();

    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::with_capacity(args.count));
    std::thread::scope(|scope| {
        for _ in 0..args.concurrency.min(args.count) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index >= args.count {
                    break;
                }
                // Every job is submitted at the start; time before a slot
                // picks it up is queue time.
                let queue = started.elapsed();
                let report = run_job(index, constraints, &inputs, &params, &verifier, queue);
                let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                print_job(&report, finished, args.count);
                reports.lock().unwrap().push(report);
            });
        }
    });
    let total = started.elapsed();
    let mut reports = reports.into_inner().unwrap();
    reports.sort_by_key(|r| r.index);
    print_summary(&reports, total);
    let failed = reports.iter().filter(|r| r.outcome.is_err()).count();
    if failed > 0 {
        bail!("{failed} of {} proofs failed", reports.len());
    }
    Ok(())
}

fn run_job(
    index: usize,
    constraints: usize,
    inputs: &[Scalar],
    params: &Arc<ProvingParameters>,
    verifier: &Verifier,
    queue: Duration,
) -> JobReport {
    let job_started = Instant::now();
    let mut report = JobReport {
        index,
        wall: Duration::ZERO,
        queue,
        synthesis: Duration::ZERO,
        prove: Duration::ZERO,
        timings: ProveTimings::default(),
        outcome: Ok(()),
    };
    report.outcome = (|| -> anyhow::Result<()> {
        let circuit = SyntheticCircuit::new(constraints, inputs.to_vec(), index as u64 + 1)
            .map_err(anyhow::Error::msg)?;
        let t = Instant::now();
        let assignment = synthesize(circuit.clone(), circuit.size_hint())?;
        report.synthesis = t.elapsed();
        let t = Instant::now();
        let pending = prove_start(assignment, params, Randomness::Secure)?;
        let (proof, timings) = finish(pending)?;
        report.prove = t.elapsed();
        report.timings = timings;
        if !verifier
            .verify(&proof, circuit.public_inputs())
            .map_err(anyhow::Error::msg)?
        {
            bail!("proof failed verification");
        }
        Ok(())
    })()
    .map_err(|e| format!("{e:#}"));
    report.wall = queue + job_started.elapsed();
    report
}

fn print_job(report: &JobReport, finished: usize, count: usize) {
    let status = match &report.outcome {
        Ok(()) => "COMPLETED".to_string(),
        Err(e) => format!("FAILED ({e})"),
    };
    println!(
        "  [{finished}/{count}] {status} — {:.1}s (prove={} ms, queue={} ms)",
        report.wall.as_secs_f64(),
        (report.synthesis + report.prove).as_millis(),
        report.queue.as_millis()
    );
}

fn stats(values: impl Iterator<Item = Duration>) -> (f64, f64, f64) {
    let v: Vec<f64> = values.map(|d| d.as_secs_f64()).collect();
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let avg = v.iter().sum::<f64>() / v.len() as f64;
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(0.0, f64::max);
    (avg, min, max)
}

fn print_summary(reports: &[JobReport], total: Duration) {
    let completed: Vec<&JobReport> = reports.iter().filter(|r| r.outcome.is_ok()).collect();
    let (wall_avg, wall_min, wall_max) = stats(completed.iter().map(|r| r.wall));
    let (prove_avg, prove_min, prove_max) = stats(completed.iter().map(|r| r.synthesis + r.prove));
    let per_proof = total.as_secs_f64() / completed.len().max(1) as f64;
    println!();
    println!("=== Batch Summary ===");
    println!("total time:    {:.1}s", total.as_secs_f64());
    println!("completed:     {}", completed.len());
    println!("failed:        {}", reports.len() - completed.len());
    println!("wall time:     avg={wall_avg:.1}s min={wall_min:.1}s max={wall_max:.1}s");
    println!("prove time:    avg={prove_avg:.1}s min={prove_min:.1}s max={prove_max:.1}s");
    println!(
        "throughput:    {:.3} proofs/min ({per_proof:.2}s/proof)",
        60.0 * completed.len() as f64 / total.as_secs_f64()
    );
    println!("verified:      {}", completed.len());
    let ms = |f: &dyn Fn(&JobReport) -> Duration| {
        completed.iter().map(|r| f(r).as_secs_f64()).sum::<f64>() * 1e3 / completed.len().max(1) as f64
    };
    println!(
        "phases (avg ms): synthesis={:.0} prepare={:.0} h_fft={:.0} h_msm={:.0} l_msm={:.0} a_msm={:.0} b_g1_msm={:.0} b_g2_msm={:.0} g2_wait={:.0} epilogue={:.1}",
        ms(&|r| r.synthesis),
        ms(&|r| r.timings.prepare),
        ms(&|r| r.timings.h_fft),
        ms(&|r| r.timings.h_msm),
        ms(&|r| r.timings.l_msm),
        ms(&|r| r.timings.a_msm),
        ms(&|r| r.timings.b_g1_msm),
        ms(&|r| r.timings.b_g2_msm),
        ms(&|r| r.timings.g2_wait),
        ms(&|r| r.timings.epilogue),
    );
}
