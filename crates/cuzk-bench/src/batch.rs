//! `cuzk-bench batch` and `single`: proofs through the engine (a daemon or
//! an embedded one), each result checked, in the seed's report format.

use crate::client::{Client, Outcome, Submission, Target};
use crate::observe;
use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use cuzk_core::ProofPlan;
use cuzk_core::{Proof, Verifier, PROOF_BYTES};
use cuzk_proto::v1 as pb;
use cuzk_synthetic::{ShapedPlan, SyntheticSpec, WitnessSource, SYNTHETIC_REGISTERED_PROOF};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Proof types the bench can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProofType {
    /// The PoRep-shaped synthetic circuit (`--log2` / `--constraints`).
    Synthetic,
    /// PoRep-shaped witnesses generated without a circuit, proved with a
    /// shaped parameter file (`--shape porep-32g`, or `--log2` /
    /// `--constraints`): the full-size pipeline. The proofs cannot verify (no
    /// setup); the engine checks their points, `--supraseal` their bytes.
    Shaped,
    /// PoRep C2 from a C1 output (`--c1`).
    Porep,
    /// WinningPoSt from a request file (`--vanilla`, as `cuzk-bench fixtures` writes).
    Winning,
    /// One WindowPoSt partition from a request file (`--vanilla`).
    Wpost,
    /// SnapDeals from a request file (`--vanilla`).
    Snap,
}

/// Wire priority names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PriorityArg {
    Low,
    Normal,
    High,
    Critical,
}

#[derive(Args, Debug, Clone)]
pub struct ProofArgs {
    #[command(flatten)]
    pub target: Target,
    /// What to prove.
    #[arg(long = "type", value_enum, default_value_t = ProofType::Synthetic)]
    pub proof_type: ProofType,
    /// Partition size as a power of two (2^K constraints).
    #[arg(long, default_value_t = 16)]
    pub log2: u32,
    /// Exact constraints per partition, overriding --log2 (non-powers of two welcome).
    #[arg(long)]
    pub constraints: Option<usize>,
    /// Partitions per proof (default 1; 10 with `--shape porep-32g`).
    #[arg(long)]
    pub partitions: Option<usize>,
    /// Public inputs per partition.
    #[arg(long, default_value_t = 2)]
    pub inputs: usize,
    /// `--type shaped`: a production shape, overriding the sizes.
    #[arg(long, value_enum)]
    pub shape: Option<crate::gen::ShapeName>,
    /// `--type shaped`: the seed of the densities the parameter file was made for.
    #[arg(long, default_value_t = 0)]
    pub shape_seed: u64,
    /// Priority (default: the proof kind's).
    #[arg(long, value_enum)]
    pub priority: Option<PriorityArg>,
    /// PoRep: the C1 output (raw JSON or the {SectorNum, Phase1Out, SectorSize} envelope).
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// PoRep: miner actor id the sector was sealed for.
    #[arg(long, default_value_t = cuzk_filecoin::fixtures::MINER_ID)]
    pub miner_id: u64,
    /// PoRep: sector number (0 = the envelope's SectorNum).
    #[arg(long, default_value_t = 0)]
    pub sector_number: u64,
    /// PoSt / SnapDeals: the request file (winning.json, wpost.json, snap.json).
    #[arg(long)]
    pub vanilla: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BatchArgs {
    #[command(flatten)]
    pub proof: ProofArgs,
    /// Number of proofs.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Proofs in flight at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// `--type shaped --embedded`: afterwards prove the first N proofs' witnesses
    /// with supraseal-c2 on the same parameter file (one call per proof), and
    /// compare speed and bytes.
    #[arg(long, default_value_t = 0)]
    pub supraseal: usize,
    /// Before the clock starts, prove one proof (of one partition for the
    /// synthetic and shaped types), so first-use costs such as the
    /// parameters' upload to the GPU are not counted.
    #[arg(long)]
    pub warmup: bool,
    /// Partitions per supraseal-c2 call (default: all of a proof, as
    /// production; fewer when host memory cannot hold them all).
    #[arg(long)]
    pub supraseal_per_call: Option<usize>,
}

impl ProofArgs {
    fn spec(&self, seed: u64) -> anyhow::Result<SyntheticSpec> {
        if self.log2 > 27 {
            bail!("--log2 {} is above 27, the largest partition served", self.log2);
        }
        let (constraints, inputs, partitions) = match self.shape {
            Some(crate::gen::ShapeName::Porep32g) => (
                cuzk_core::shaped::POREP_32G_CONSTRAINTS,
                cuzk_core::shaped::POREP_32G_INPUTS,
                10,
            ),
            None => (self.constraints.unwrap_or(1usize << self.log2), self.inputs, 1),
        };
        Ok(SyntheticSpec {
            constraints,
            partitions: self.partitions.unwrap_or(partitions),
            inputs,
            seed,
            witness: match self.proof_type {
                ProofType::Shaped => WitnessSource::Shaped,
                _ => WitnessSource::Circuit,
            },
            shape_seed: self.shape_seed,
        })
    }

    /// The request of proof `seed`, the plan the engine will make of it,
    /// and, for a Filecoin request whose vanilla proofs do not verify (a
    /// real-structure input), why its proof cannot verify.
    fn submission(&self, seed: u64) -> anyhow::Result<(Submission, Box<dyn ProofPlan>, Option<String>)> {
        let priority = match self.priority {
            None => pb::Priority::Unspecified,
            Some(PriorityArg::Low) => pb::Priority::Low,
            Some(PriorityArg::Normal) => pb::Priority::Normal,
            Some(PriorityArg::High) => pb::Priority::High,
            Some(PriorityArg::Critical) => pb::Priority::Critical,
        };

        let submission = match self.proof_type {
            ProofType::Synthetic | ProofType::Shaped => {
                let spec = self.spec(seed)?;
                Submission {
                    proof_kind: pb::ProofKind::PorepSealCommit as i32,
                    registered_proof: SYNTHETIC_REGISTERED_PROOF,
                    vanilla_proof: spec.to_vanilla_proof(),
                    ..Default::default()
                }
            }
            ProofType::Porep => {
                let path = self.c1.as_ref().context("--type porep needs --c1 <C1 output>")?;
                let c1 = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                Submission {
                    proof_kind: pb::ProofKind::PorepSealCommit as i32,
                    registered_proof: cuzk_filecoin::request::c1_registered_proof(&c1)?,
                    vanilla_proof: c1,
                    miner_id: self.miner_id,
                    sector_number: self.sector_number,
                    ..Default::default()
                }
            }
            ProofType::Winning | ProofType::Wpost | ProofType::Snap => {
                let path = self
                    .vanilla
                    .as_ref()
                    .context("--type winning|wpost|snap needs --vanilla <request file>")?;
                let file = cuzk_filecoin::fixtures::load_request_file(path)?;
                use cuzk_filecoin::fixtures::RequestKind;
                let (kind, wanted) = match self.proof_type {
                    ProofType::Winning => (pb::ProofKind::WinningPost, RequestKind::Winning),
                    ProofType::Wpost => (pb::ProofKind::WindowPostPartition, RequestKind::Wpost),
                    _ => (pb::ProofKind::SnapDealsUpdate, RequestKind::Snap),
                };
                if file.proof_kind != wanted {
                    bail!(
                        "{} is a {:?} request, not {:?}",
                        path.display(),
                        file.proof_kind,
                        wanted
                    );
                }
                Submission {
                    proof_kind: kind as i32,
                    registered_proof: file.registered_proof,
                    sector_size: file.sector_size,
                    vanilla_proofs: file.vanilla_proof_bytes()?,
                    sector_number: file.sector_number,
                    miner_id: file.miner_id,
                    randomness: file.randomness_bytes()?,
                    partition_index: file.partition_index,
                    comm_r_old: file.comm_r_old_bytes()?,
                    comm_r_new: file.comm_r_new_bytes()?,
                    comm_d_new: file.comm_d_new_bytes()?,
                    ..Default::default()
                }
            }
        };
        let submission = Submission {
            priority: priority as i32,
            ..submission
        };
        // The same plan the engine will make: its circuit id and public
        // inputs serve the local check of the returned proof.
        let request = cuzk_daemon::wire::to_request(submission.clone())
            .map_err(|e| anyhow::anyhow!("{}", e.message()))?;
        if matches!(self.proof_type, ProofType::Synthetic | ProofType::Shaped) {
            let sources = cuzk_daemon::setup::plan_sources(&self.target.param_cache(), true, false, false)?;
            let plan = sources
                .iter()
                .find_map(|source| source.plan(&request))
                .context("no plan source serves this request")??;
            return Ok((submission, plan, None));
        }
        // Filecoin requests are planned here with the benchmark switch on,
        // whatever the engine's (which decides whether it takes them): the
        // client must know whether the returned proof can verify at all.
        let planned = cuzk_filecoin::plan_with(
            &request,
            cuzk_filecoin::PlanOptions {
                allow_unverifiable: true,
            },
        )?;
        Ok((submission, planned.plan, planned.unverifiable))
    }
}

/// Checks a returned proof with bellperson's verifier against the `.vk`
/// in the local parameter directory; `None` when there is no such file
/// (a daemon on another machine), in which case only the daemon's own
/// verification stands behind the proof.
fn verify_locally(
    verifier: Option<&Verifier>,
    plan: &dyn ProofPlan,
    bytes: &[u8],
) -> anyhow::Result<Option<bool>> {
    let Some(verifier) = verifier else {
        return Ok(None);
    };
    if bytes.len() != PROOF_BYTES * plan.partitions() {
        return Ok(Some(false));
    }
    for (index, chunk) in bytes.chunks(PROOF_BYTES).enumerate() {
        let proof = Proof::<cuzk_core::Bls12>::read(chunk)?;
        if !verifier
            .verify(&proof, &plan.public_inputs(index))
            .map_err(anyhow::Error::msg)?
        {
            return Ok(Some(false));
        }
    }
    Ok(Some(true))
}

fn local_verifier(target: &Target, plan: &dyn ProofPlan) -> Option<Verifier> {
    let path = target.param_cache().join(format!("{}.vk", plan.circuit_id()));
    cuzk_core::params::read_vk(&path)
        .ok()
        .map(|vk| Verifier::new(&vk))
}

struct Report {
    index: usize,
    wall: Duration,
    outcome: anyhow::Result<Outcome>,
    verified: Option<bool>,
    /// Why the proof cannot verify (a real-structure input), when so: it is
    /// not checked here, and the daemon skipped its verification.
    unverifiable: Option<String>,
}

fn status_name(outcome: &Outcome) -> &'static str {
    match pb::await_proof_response::Status::try_from(outcome.status) {
        Ok(pb::await_proof_response::Status::Completed) => "COMPLETED",
        Ok(pb::await_proof_response::Status::Failed) => "FAILED",
        Ok(pb::await_proof_response::Status::Cancelled) => "CANCELLED",
        Ok(pb::await_proof_response::Status::Timeout) => "TIMEOUT",
        _ => "UNKNOWN",
    }
}

fn is_good(report: &Report) -> bool {
    matches!(&report.outcome, Ok(o) if status_name(o) == "COMPLETED") && report.verified != Some(false)
}

async fn prove_one(client: &Client, args: &ProofArgs, index: usize) -> Report {
    let started = Instant::now();
    let mut verified = None;
    let mut unverifiable = None;
    let outcome = async {
        let (submission, plan, cannot) = args.submission(index as u64 + 1)?;
        unverifiable = cannot;
        let (job_id, _) = client.submit(&submission).await?;
        let outcome = client.wait(&job_id, None).await?;
        if status_name(&outcome) == "COMPLETED" && unverifiable.is_none() {
            let verifier = local_verifier(&args.target, plan.as_ref());
            verified = verify_locally(verifier.as_ref(), plan.as_ref(), &outcome.proof)?;
        }
        Ok(outcome)
    }
    .await;
    Report {
        index,
        wall: started.elapsed(),
        outcome,
        verified,
        unverifiable,
    }
}

fn job_line(report: &Report, finished: usize, count: usize) -> String {
    match &report.outcome {
        Ok(o) => {
            let mut status = status_name(o).to_string();
            if report.verified == Some(false) {
                status = "FAILED VERIFICATION".into();
            } else if report.unverifiable.is_some() && status == "COMPLETED" {
                status = "COMPLETED (UNVERIFIED: unverifiable input)".into();
            }
            let mut line = format!(
                "  [{finished}/{count}] {status} — {:.1}s (prove={} ms, queue={} ms)",
                report.wall.as_secs_f64(),
                o.synthesis_ms + o.gpu_compute_ms,
                o.queue_wait_ms
            );
            if !o.error_message.is_empty() {
                line.push_str(&format!(": {}", o.error_message));
            }
            line
        }
        Err(e) => format!(
            "  [{finished}/{count}] FAILED — {:.1}s: {e:#}",
            report.wall.as_secs_f64()
        ),
    }
}

pub async fn run(args: BatchArgs) -> anyhow::Result<()> {
    if args.count == 0 || args.concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    let proof = args.proof.clone();
    let (_, plan, unverifiable) = proof.submission(0)?;
    if let Some(reason) = &unverifiable {
        println!(
            "UNVERIFIABLE: {reason}; the proofs are not verified (the engine needs \
             [benchmark] allow_unverifiable = true, or --allow-unverifiable with --embedded)"
        );
    }
    let client = Client::connect(&proof.target).await?;
    // Load (or generate) the parameters before the clock starts, as a daemon
    // with preloaded parameters would have them.
    let loaded = Instant::now();
    let (already, _) = client
        .preload(&plan.circuit_id())
        .await
        .context("loading parameters")?;
    println!(
        "parameters:  {} {} ({:.1}s)",
        plan.circuit_id(),
        if already {
            "already resident"
        } else {
            "loaded or generated"
        },
        loaded.elapsed().as_secs_f64()
    );

    if args.warmup {
        let mut warm = proof.clone();
        warm.partitions = Some(1);
        let t = Instant::now();
        let report = prove_one(&client, &warm, usize::MAX - 1).await;
        if !is_good(&report) {
            bail!("warm-up proof failed: {}", job_line(&report, 1, 1));
        }
        println!("warm-up:     one partition in {:.1}s", t.elapsed().as_secs_f64());
    }

    println!("=== Batch Benchmark ===");
    println!("proof type:  {:?}", proof.proof_type);
    match proof.proof_type {
        ProofType::Synthetic | ProofType::Shaped => println!(
            "constraints: {} x {} partition(s)",
            proof.spec(0)?.constraints,
            plan.partitions()
        ),
        _ => println!("partitions:  {}", plan.partitions()),
    }
    println!("count:       {}", args.count);
    println!("concurrency: {}", args.concurrency);
    println!();

    let progress = if std::io::stdout().is_terminal() {
        let bar = ProgressBar::new(args.count as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} proofs, {elapsed}").expect("static template"),
        );
        Some(bar)
    } else {
        None
    };
    if args.supraseal > 0 {
        if proof.proof_type != ProofType::Shaped || !proof.target.embedded {
            bail!("--supraseal compares shaped proofs: use --type shaped --embedded");
        }
        if !crate::supraseal::AVAILABLE {
            bail!("--supraseal needs a build with --features supraseal");
        }
    }
    let metrics_before = client.metrics().await.unwrap_or_default();
    let rss_loaded = observe::proc_status_bytes("VmRSS");
    let sampler = observe::Sampler::start(client.clone(), Duration::from_millis(200));
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..args.concurrency.min(args.count) {
        let (client, proof, next, done, progress) = (
            client.clone(),
            proof.clone(),
            next.clone(),
            done.clone(),
            progress.clone(),
        );
        let count = args.count;
        tasks.push(tokio::spawn(async move {
            let mut reports = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index >= count {
                    break;
                }
                let report = prove_one(&client, &proof, index).await;
                let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                let line = job_line(&report, finished, count);
                match &progress {
                    Some(bar) => {
                        bar.println(line);
                        bar.inc(1);
                    }
                    None => println!("{line}"),
                }
                reports.push(report);
            }
            reports
        }));
    }
    let mut reports = Vec::new();
    for task in tasks {
        reports.extend(task.await?);
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let total = started.elapsed();
    let peaks = sampler.finish().await;
    let metrics_after = client.metrics().await.unwrap_or_default();
    reports.sort_by_key(|r| r.index);
    summarize(&reports, total, &proof);
    let usage = Usage {
        metrics_before,
        metrics_after,
        wall: total,
        peaks,
        rss_loaded: rss_loaded.filter(|_| proof.target.embedded),
        partition_bytes: plan.partition_bytes(),
        partitions: plan.partitions() * reports.len(),
    };
    usage.print();
    let failed = reports.iter().filter(|r| !is_good(r)).count();
    if args.supraseal > 0 && failed == 0 {
        // The engine goes first, so its memory (host and GPU) is free for
        // supraseal-c2's own copy of the parameters.
        drop(client);
        let good = reports.len().max(1) as f64;
        side_by_side(&args, &reports, total.as_secs_f64() / good)?;
    }
    if failed > 0 {
        bail!("{failed} of {} proofs failed", reports.len());
    }
    Ok(())
}

/// Resource use of a batch, from metrics and samples.
struct Usage {
    metrics_before: String,
    metrics_after: String,
    wall: Duration,
    peaks: observe::Peaks,
    rss_loaded: Option<u64>,
    partition_bytes: u64,
    partitions: usize,
}

impl Usage {
    fn print(&self) {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let (before, after) = (&self.metrics_before, &self.metrics_after);
        let phases: Vec<String> = ["synthesis", "prover_queue", "prove_start", "finish"]
            .iter()
            .map(|phase| {
                let (avg, _) = observe::phase_average(before, after, phase);
                format!("{phase}={avg:.2}s")
            })
            .collect();
        println!("per partition (avg of {}): {}", self.partitions, phases.join(" "));
        let busy_before = observe::per_device(before, "cuzk_gpu_busy_seconds_total");
        for (device, busy) in observe::per_device(after, "cuzk_gpu_busy_seconds_total") {
            let earlier = busy_before.iter().find(|b| b.0 == device).map_or(0.0, |b| b.1);
            let busy = busy - earlier;
            println!(
                "gpu busy:      device {device}: {:.1}% ({busy:.1}s in CUDA regions of {:.1}s wall)",
                100.0 * busy / self.wall.as_secs_f64(),
                self.wall.as_secs_f64()
            );
        }
        for (name, used, total) in &self.peaks.vram {
            println!(
                "peak VRAM:     device {name}: {:.1} GiB of {:.1} GiB",
                gib(*used),
                gib(*total)
            );
        }
        let in_flight = (self.peaks.granted_bytes as f64 / self.partition_bytes.max(1) as f64).ceil();
        match (self.rss_loaded, observe::proc_status_bytes("VmHWM")) {
            (Some(loaded), Some(peak)) => {
                println!(
                    "host memory:   peak RSS {:.2} GiB; {:.2} GiB with parameters loaded, before the batch",
                    gib(peak),
                    gib(loaded)
                );
                if in_flight >= 1.0 {
                    println!(
                        "               at most {in_flight:.0} partition(s) in flight: {:.2} GiB per partition above the loaded parameters",
                        gib(peak.saturating_sub(loaded)) / in_flight
                    );
                }
            }
            _ => println!(
                "host memory:   the daemon's (not measured from here); at most {in_flight:.0} partition(s) in flight"
            ),
        }
    }
}

/// supraseal-c2 on the witnesses of the first `--supraseal` proofs, with the
/// same parameter file and blinding factors: its time per proof, and whether
/// its bytes equal the engine's.
fn side_by_side(args: &BatchArgs, reports: &[Report], ours: f64) -> anyhow::Result<()> {
    let proof = &args.proof;
    let first = ShapedPlan::new(proof.spec(1)?)?;
    let path = proof
        .target
        .param_cache()
        .join(format!("{}.params", first.circuit_id()));
    let loaded = Instant::now();
    let srs = crate::supraseal::Srs::load(&path)?;
    println!();
    println!("=== supraseal-c2 0.1.2, same parameter file and witnesses ===");
    println!("parameters loaded in {:.1}s", loaded.elapsed().as_secs_f64());
    let mut times = Vec::new();
    let mut all_same = true;
    for report in reports.iter().take(args.supraseal) {
        let plan = ShapedPlan::new(proof.spec(report.index as u64 + 1)?)?;
        let per_call = args.supraseal_per_call.unwrap_or(plan.partitions()).max(1);
        let partitions: Vec<usize> = (0..plan.partitions()).collect();
        let (mut bytes, mut proving, mut witness) = (Vec::new(), Duration::ZERO, Duration::ZERO);
        for chunk in partitions.chunks(per_call) {
            let t = Instant::now();
            let assignments = chunk
                .iter()
                .map(|&p| plan.synthesize(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)?;
            witness += t.elapsed();
            let (r, s): (Vec<_>, Vec<_>) = chunk.iter().map(|&p| plan.fixed_randomness(p)).unzip();
            let t = Instant::now();
            let proofs = srs.prove(&assignments, &r, &s);
            proving += t.elapsed();
            bytes.extend(proofs.iter().flat_map(cuzk_core::proof_to_bytes));
        }
        let ours = report
            .outcome
            .as_ref()
            .map(|o| o.proof.as_slice())
            .unwrap_or_default();
        let same = bytes == ours;
        all_same &= same;
        println!(
            "proof {}: {:.1}s in {} call(s) of {per_call} partition(s) (+{:.1}s generating the witnesses, not counted); bytes equal cuzk's: {same}",
            report.index,
            proving.as_secs_f64(),
            partitions.len().div_ceil(per_call),
            witness.as_secs_f64()
        );
        times.push(proving.as_secs_f64());
    }
    let theirs = times.iter().sum::<f64>() / times.len().max(1) as f64;
    println!(
        "side by side: cuzk {ours:.1} s/proof ({:.0} proofs/hour, pipelined, witness generation included) vs supraseal-c2 {theirs:.1} s/proof ({:.0} proofs/hour, proving calls only): cuzk {:.2}x",
        3600.0 / ours,
        3600.0 / theirs,
        theirs / ours
    );
    if !all_same {
        bail!("supraseal-c2's proof bytes differ from cuzk's");
    }
    Ok(())
}

fn stats(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let avg = values.iter().sum::<f64>() / values.len() as f64;
    let min = values.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = values.iter().cloned().fold(0.0, f64::max);
    (avg, min, max)
}

fn summarize(reports: &[Report], total: Duration, proof: &ProofArgs) {
    let target = &proof.target;
    let good: Vec<&Report> = reports.iter().filter(|r| is_good(r)).collect();
    let outcomes: Vec<&Outcome> = good.iter().filter_map(|r| r.outcome.as_ref().ok()).collect();
    let walls: Vec<f64> = good.iter().map(|r| r.wall.as_secs_f64()).collect();
    let proves: Vec<f64> = outcomes
        .iter()
        .map(|o| (o.synthesis_ms + o.gpu_compute_ms) as f64 / 1e3)
        .collect();
    let (wall_avg, wall_min, wall_max) = stats(&walls);
    let (prove_avg, prove_min, prove_max) = stats(&proves);
    let per_proof = total.as_secs_f64() / good.len().max(1) as f64;
    let locally = good.iter().filter(|r| r.verified == Some(true)).count();
    let unverified = good.iter().filter(|r| r.unverifiable.is_some()).count();
    println!();
    println!("=== Batch Summary ===");
    println!("total time:    {:.1}s", total.as_secs_f64());
    println!("completed:     {}", good.len());
    println!("failed:        {}", reports.len() - good.len());
    println!("wall time:     avg={wall_avg:.1}s min={wall_min:.1}s max={wall_max:.1}s");
    println!("prove time:    avg={prove_avg:.1}s min={prove_min:.1}s max={prove_max:.1}s");
    println!(
        "throughput:    {:.3} proofs/min, {:.1} proofs/hour ({per_proof:.2}s/proof)",
        60.0 * good.len() as f64 / total.as_secs_f64(),
        3600.0 * good.len() as f64 / total.as_secs_f64()
    );
    if proof.proof_type == ProofType::Shaped {
        println!(
            "checked:       {} by the engine: points valid (shaped proofs cannot verify: no setup; --supraseal compares bytes)",
            good.len()
        );
    } else if unverified > 0 {
        println!(
            "verified:      {locally}; UNVERIFIED: {unverified} (unverifiable inputs, e.g. real-structure: \
             proved without verification)"
        );
    } else if locally == good.len() {
        println!("verified:      {locally}");
    } else {
        println!(
            "verified:      {locally} here ({} verified by the daemon only: no .vk in {})",
            good.len() - locally,
            target.param_cache().display()
        );
    }
    let avg = |f: &dyn Fn(&Outcome) -> u64| {
        outcomes.iter().map(|o| f(o) as f64).sum::<f64>() / outcomes.len().max(1) as f64
    };
    println!(
        "phases (avg ms): queue={:.0} srs_load={:.0} synthesis={:.0} prove={:.0} total={:.0}",
        avg(&|o| o.queue_wait_ms),
        avg(&|o| o.srs_load_ms),
        avg(&|o| o.synthesis_ms),
        avg(&|o| o.gpu_compute_ms),
        avg(&|o| o.total_ms),
    );
}

/// `cuzk-bench single`: one proof, with its details.
pub async fn single(args: ProofArgs) -> anyhow::Result<()> {
    let client = Client::connect(&args.target).await?;
    let report = prove_one(&client, &args, 0).await;
    let outcome = report.outcome.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
    println!("job:        {}", outcome.job_id);
    println!("status:     {}", status_name(outcome));
    if !outcome.error_message.is_empty() {
        println!("error:      {}", outcome.error_message);
    }
    println!("proof:      {} bytes", outcome.proof.len());
    println!(
        "timings:    queue={} ms srs_load={} ms synthesis={} ms prove={} ms total={} ms",
        outcome.queue_wait_ms,
        outcome.srs_load_ms,
        outcome.synthesis_ms,
        outcome.gpu_compute_ms,
        outcome.total_ms
    );
    println!("wall:       {:.3}s", report.wall.as_secs_f64());
    match (&report.unverifiable, report.verified) {
        (Some(reason), _) => {
            println!("verified:   NO, UNVERIFIABLE input ({reason}): proved without verification")
        }
        (None, Some(true)) => println!("verified:   yes (bellperson verifier, local .vk)"),
        (None, Some(false)) => println!("verified:   NO"),
        (None, None) => println!("verified:   by the daemon (no local .vk)"),
    }
    if !is_good(&report) {
        bail!("proof not completed and verified");
    }
    Ok(())
}
