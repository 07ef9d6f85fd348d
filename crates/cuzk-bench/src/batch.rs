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
use serde::Serialize;
use std::collections::BTreeMap;
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
    /// Also write the figures, with the build and the host, as JSON
    /// (docs/bench/SCHEMA.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
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
            let sources = cuzk_daemon::setup::plan_sources(
                &self.target.param_cache(),
                true,
                false,
                false,
                false,
                std::sync::Arc::new(cuzk_core::R1csStore::memory_only()),
            )?;
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
                ..Default::default()
            }
            .with_environment(),
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

pub(crate) struct Report {
    index: usize,
    wall: Duration,
    pub(crate) outcome: anyhow::Result<Outcome>,
    pub(crate) verified: Option<bool>,
    /// Why the proof cannot verify (a real-structure input), when so: it is
    /// not checked here, and the daemon skipped its verification.
    unverifiable: Option<String>,
    /// The plan's circuit id, once the request was planned.
    pub(crate) circuit_id: Option<String>,
}

/// One proof in the JSON report (the text report's job line).
#[derive(Debug, Serialize)]
pub(crate) struct ProofRecord {
    index: usize,
    /// COMPLETED, FAILED, CANCELLED, TIMEOUT, FAILED VERIFICATION, or
    /// ERROR (the bench could not submit or await it).
    status: String,
    wall_seconds: f64,
    queue_wait_ms: u64,
    pub(crate) srs_load_ms: u64,
    pub(crate) synthesis_ms: u64,
    pub(crate) gpu_compute_ms: u64,
    total_ms: u64,
    proof_bytes: usize,
    /// Checked here with bellperson's verifier: true or false; null when
    /// not checked here (no local .vk, or an unverifiable input).
    verified: Option<bool>,
    unverifiable: Option<String>,
    error: Option<String>,
}

impl ProofRecord {
    pub(crate) fn of(report: &Report) -> Self {
        let (status, o, error) = match &report.outcome {
            Ok(o) => {
                let status = if report.verified == Some(false) {
                    "FAILED VERIFICATION"
                } else {
                    status_name(o)
                };
                let error = Some(o.error_message.clone()).filter(|e| !e.is_empty());
                (status.to_string(), o.clone(), error)
            }
            Err(e) => ("ERROR".to_string(), Outcome::default(), Some(format!("{e:#}"))),
        };
        Self {
            index: report.index,
            status,
            wall_seconds: report.wall.as_secs_f64(),
            queue_wait_ms: o.queue_wait_ms,
            srs_load_ms: o.srs_load_ms,
            synthesis_ms: o.synthesis_ms,
            gpu_compute_ms: o.gpu_compute_ms,
            total_ms: o.total_ms,
            proof_bytes: o.proof.len(),
            verified: report.verified,
            unverifiable: report.unverifiable.clone(),
            error,
        }
    }
}

/// Where the engine ran, for the JSON report.
#[derive(Debug, Serialize)]
struct TargetRecord {
    embedded: bool,
    /// The daemon's address; null for an embedded engine.
    addr: Option<String>,
}

impl TargetRecord {
    fn of(target: &Target) -> Self {
        Self {
            embedded: target.embedded,
            addr: (!target.embedded).then(|| target.daemon.addr.clone()),
        }
    }
}

/// A device of the engine as its status reports it (the daemon's, which
/// may be another machine than the report's host).
#[derive(Debug, Serialize)]
struct DeviceRecord {
    ordinal: u32,
    name: String,
    vram_total_bytes: u64,
}

async fn engine_devices(client: &Client) -> Vec<DeviceRecord> {
    let Ok(status) = client.status().await else {
        return Vec::new();
    };
    status
        .gpus
        .iter()
        .map(|g| DeviceRecord {
            ordinal: g.ordinal,
            name: g.name.clone(),
            vram_total_bytes: g.vram_total_bytes,
        })
        .collect()
}

pub(crate) fn status_name(outcome: &Outcome) -> &'static str {
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

pub(crate) async fn prove_one(client: &Client, args: &ProofArgs, index: usize) -> Report {
    let started = Instant::now();
    let mut verified = None;
    let mut unverifiable = None;
    let mut circuit_id = None;
    let outcome = async {
        let (submission, plan, cannot) = args.submission(index as u64 + 1)?;
        unverifiable = cannot;
        circuit_id = Some(plan.circuit_id());
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
        circuit_id,
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

/// `batch`'s figures in the JSON report (docs/bench/SCHEMA.md).
#[derive(Debug, Serialize)]
struct BatchResults {
    target: TargetRecord,
    proof_type: String,
    circuit_id: String,
    /// Constraints per partition (synthetic and shaped proofs).
    constraints: Option<usize>,
    partitions: usize,
    count: usize,
    concurrency: usize,
    parameters: ParametersRecord,
    /// The warm-up proof's seconds (`--warmup`), not counted below.
    warmup_seconds: Option<f64>,
    proofs: Vec<ProofRecord>,
    summary: BatchSummary,
    usage: UsageFigures,
    /// The engine's devices (GetStatus), wherever it runs.
    engine_devices: Vec<DeviceRecord>,
    supraseal: Option<SupraResults>,
}

#[derive(Debug, Serialize)]
struct ParametersRecord {
    already_resident: bool,
    /// Loading (or generating) them, before the clock starts.
    seconds: f64,
}

pub async fn run(args: BatchArgs) -> anyhow::Result<()> {
    if args.count == 0 || args.concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    let json = crate::report::start("batch", args.proof.json.as_deref());
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
    let parameters = ParametersRecord {
        already_resident: already,
        seconds: loaded.elapsed().as_secs_f64(),
    };
    println!(
        "parameters:  {} {} ({:.1}s)",
        plan.circuit_id(),
        if already {
            "already resident"
        } else {
            "loaded or generated"
        },
        parameters.seconds
    );

    let mut warmup_seconds = None;
    if args.warmup {
        let mut warm = proof.clone();
        warm.partitions = Some(1);
        let t = Instant::now();
        let report = prove_one(&client, &warm, usize::MAX - 1).await;
        if !is_good(&report) {
            bail!("warm-up proof failed: {}", job_line(&report, 1, 1));
        }
        warmup_seconds = Some(t.elapsed().as_secs_f64());
        println!("warm-up:     one partition in {:.1}s", t.elapsed().as_secs_f64());
    }

    let constraints = match proof.proof_type {
        ProofType::Synthetic | ProofType::Shaped => Some(proof.spec(0)?.constraints),
        _ => None,
    };
    println!("=== Batch Benchmark ===");
    println!("proof type:  {:?}", proof.proof_type);
    match constraints {
        Some(constraints) => println!("constraints: {constraints} x {} partition(s)", plan.partitions()),
        None => println!("partitions:  {}", plan.partitions()),
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
    let summary = summarize(&reports, total, &proof);
    summary.print(&proof);
    let usage = Usage {
        metrics_before,
        metrics_after,
        wall: total,
        peaks,
        rss_loaded: rss_loaded.filter(|_| proof.target.embedded),
        partition_bytes: plan.partition_bytes(),
        partitions: plan.partitions() * reports.len(),
    }
    .figures();
    usage.print();
    let engine_devices = engine_devices(&client).await;
    let failed = reports.iter().filter(|r| !is_good(r)).count();
    let mut supraseal = None;
    if args.supraseal > 0 && failed == 0 {
        // The engine goes first, so its memory (host and GPU) is free for
        // supraseal-c2's own copy of the parameters.
        drop(client);
        let good = reports.len().max(1) as f64;
        supraseal = Some(side_by_side(&args, &reports, total.as_secs_f64() / good)?);
    }
    // The report is written whatever the outcome: a failed batch's figures
    // say what failed.
    json.write(&BatchResults {
        target: TargetRecord::of(&proof.target),
        proof_type: format!("{:?}", proof.proof_type).to_lowercase(),
        circuit_id: plan.circuit_id(),
        constraints,
        partitions: plan.partitions(),
        count: args.count,
        concurrency: args.concurrency,
        parameters,
        warmup_seconds,
        proofs: reports.iter().map(ProofRecord::of).collect(),
        summary,
        usage,
        engine_devices,
        supraseal: supraseal.clone(),
    })?;
    if failed > 0 {
        bail!("{failed} of {} proofs failed", reports.len());
    }
    if supraseal.is_some_and(|s| !s.all_bytes_equal) {
        bail!("supraseal-c2's proof bytes differ from cuzk's");
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

/// What a batch used besides time (the text report's last lines).
#[derive(Debug, Serialize)]
struct UsageFigures {
    /// Partitions proved (all proofs).
    partitions: usize,
    /// Average seconds per partition of each pipeline phase (synthesis,
    /// prover_queue, prove_start, finish), from the engine's metrics.
    phase_seconds: BTreeMap<String, f64>,
    gpu_busy: Vec<GpuBusy>,
    peak_vram: Vec<PeakVram>,
    /// Most partition memory the engine's budget granted at once, and the
    /// partitions that is (by the plan's bytes per partition).
    peak_granted_bytes: u64,
    partition_bytes: u64,
    partitions_in_flight_max: u64,
    /// This process's memory: only for an embedded engine (null for a daemon).
    host_memory: Option<HostMemory>,
    #[serde(skip)]
    wall_seconds: f64,
}

#[derive(Debug, Serialize)]
struct GpuBusy {
    device: String,
    /// Seconds inside CUDA regions during the batch.
    busy_seconds: f64,
    /// busy_seconds over the batch's wall time.
    fraction: f64,
}

#[derive(Debug, Serialize)]
struct PeakVram {
    device: String,
    used_bytes: u64,
    total_bytes: u64,
}

#[derive(Debug, Serialize)]
struct HostMemory {
    peak_rss_bytes: u64,
    /// RSS with the parameters loaded, before the batch.
    rss_loaded_bytes: u64,
    /// (peak - loaded) / partitions in flight; null below one in flight.
    per_partition_bytes: Option<u64>,
}

impl Usage {
    fn figures(&self) -> UsageFigures {
        let (before, after) = (&self.metrics_before, &self.metrics_after);
        let phase_seconds = ["synthesis", "prover_queue", "prove_start", "finish"]
            .iter()
            .map(|phase| (phase.to_string(), observe::phase_average(before, after, phase).0))
            .collect();
        let wall = self.wall.as_secs_f64();
        let busy_before = observe::per_device(before, "cuzk_gpu_busy_seconds_total");
        let gpu_busy = observe::per_device(after, "cuzk_gpu_busy_seconds_total")
            .into_iter()
            .map(|(device, busy)| {
                let earlier = busy_before.iter().find(|b| b.0 == device).map_or(0.0, |b| b.1);
                let busy = busy - earlier;
                GpuBusy {
                    device,
                    busy_seconds: busy,
                    fraction: busy / wall,
                }
            })
            .collect();
        let peak_vram = self
            .peaks
            .vram
            .iter()
            .map(|(device, used, total)| PeakVram {
                device: device.clone(),
                used_bytes: *used,
                total_bytes: *total,
            })
            .collect();
        let in_flight = (self.peaks.granted_bytes as f64 / self.partition_bytes.max(1) as f64).ceil() as u64;
        let host_memory = match (self.rss_loaded, observe::proc_status_bytes("VmHWM")) {
            (Some(loaded), Some(peak)) => Some(HostMemory {
                peak_rss_bytes: peak,
                rss_loaded_bytes: loaded,
                per_partition_bytes: (in_flight >= 1).then(|| peak.saturating_sub(loaded) / in_flight),
            }),
            _ => None,
        };
        UsageFigures {
            partitions: self.partitions,
            phase_seconds,
            gpu_busy,
            peak_vram,
            peak_granted_bytes: self.peaks.granted_bytes,
            partition_bytes: self.partition_bytes,
            partitions_in_flight_max: in_flight,
            host_memory,
            wall_seconds: wall,
        }
    }
}

impl UsageFigures {
    fn print(&self) {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let phases: Vec<String> = ["synthesis", "prover_queue", "prove_start", "finish"]
            .iter()
            .map(|phase| format!("{phase}={:.2}s", self.phase_seconds[*phase]))
            .collect();
        println!("per partition (avg of {}): {}", self.partitions, phases.join(" "));
        for g in &self.gpu_busy {
            println!(
                "gpu busy:      device {}: {:.1}% ({:.1}s in CUDA regions of {:.1}s wall)",
                g.device,
                100.0 * g.fraction,
                g.busy_seconds,
                self.wall_seconds
            );
        }
        for v in &self.peak_vram {
            println!(
                "peak VRAM:     device {}: {:.1} GiB of {:.1} GiB",
                v.device,
                gib(v.used_bytes),
                gib(v.total_bytes)
            );
        }
        let in_flight = self.partitions_in_flight_max;
        match &self.host_memory {
            Some(m) => {
                println!(
                    "host memory:   peak RSS {:.2} GiB; {:.2} GiB with parameters loaded, before the batch",
                    gib(m.peak_rss_bytes),
                    gib(m.rss_loaded_bytes)
                );
                if let Some(per) = m.per_partition_bytes {
                    println!(
                        "               at most {in_flight} partition(s) in flight: {:.2} GiB per partition above the loaded parameters",
                        gib(per)
                    );
                }
            }
            None => println!(
                "host memory:   the daemon's (not measured from here); at most {in_flight} partition(s) in flight"
            ),
        }
    }
}

/// supraseal-c2 beside the engine, in the JSON report.
#[derive(Clone, Debug, Serialize)]
struct SupraResults {
    proofs: Vec<SupraProof>,
    /// cuzk's seconds per proof (pipelined, witness generation included).
    cuzk_seconds_per_proof: f64,
    /// supraseal-c2's seconds per proof (proving calls only).
    supraseal_seconds_per_proof: f64,
    /// supraseal / cuzk: above 1, cuzk is faster.
    speedup: f64,
    all_bytes_equal: bool,
}

#[derive(Clone, Debug, Serialize)]
struct SupraProof {
    index: usize,
    proving_seconds: f64,
    calls: usize,
    partitions_per_call: usize,
    /// Generating the witnesses for it (not counted).
    witness_seconds: f64,
    bytes_equal: bool,
}

/// supraseal-c2 on the witnesses of the first `--supraseal` proofs, with the
/// same parameter file and blinding factors: its time per proof, and whether
/// its bytes equal the engine's (the caller fails the batch if not).
fn side_by_side(args: &BatchArgs, reports: &[Report], ours: f64) -> anyhow::Result<SupraResults> {
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
    let mut proofs = Vec::new();
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
        let differing: Vec<usize> = (0..plan.partitions())
            .filter(|&p| bytes.get(p * 192..(p + 1) * 192) != ours.get(p * 192..(p + 1) * 192))
            .collect();
        if !same {
            println!(
                "proof {}: partitions whose bytes differ: {differing:?}",
                report.index
            );
        }
        // A digest of each side's bytes, to compare across runs (for example
        // a capped device's proof with the same proof made uncapped).
        let digest = |b: &[u8]| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            b.hash(&mut h);
            h.finish()
        };
        println!(
            "proof {}: digests cuzk {:016x}, supraseal-c2 {:016x}",
            report.index,
            digest(ours),
            digest(&bytes)
        );
        let calls = partitions.len().div_ceil(per_call);
        println!(
            "proof {}: {:.1}s in {calls} call(s) of {per_call} partition(s) (+{:.1}s generating the witnesses, not counted); bytes equal cuzk's: {same}",
            report.index,
            proving.as_secs_f64(),
            witness.as_secs_f64()
        );
        proofs.push(SupraProof {
            index: report.index,
            proving_seconds: proving.as_secs_f64(),
            calls,
            partitions_per_call: per_call,
            witness_seconds: witness.as_secs_f64(),
            bytes_equal: same,
        });
    }
    let theirs = proofs.iter().map(|p| p.proving_seconds).sum::<f64>() / proofs.len().max(1) as f64;
    println!(
        "side by side: cuzk {ours:.1} s/proof ({:.0} proofs/hour, pipelined, witness generation included) vs supraseal-c2 {theirs:.1} s/proof ({:.0} proofs/hour, proving calls only): cuzk {:.2}x",
        3600.0 / ours,
        3600.0 / theirs,
        theirs / ours
    );
    Ok(SupraResults {
        all_bytes_equal: proofs.iter().all(|p| p.bytes_equal),
        proofs,
        cuzk_seconds_per_proof: ours,
        supraseal_seconds_per_proof: theirs,
        speedup: theirs / ours,
    })
}

/// Average, minimum and maximum.
#[derive(Debug, Default, Serialize)]
struct Stats {
    avg: f64,
    min: f64,
    max: f64,
}

fn stats(values: &[f64]) -> Stats {
    if values.is_empty() {
        return Stats::default();
    }
    Stats {
        avg: values.iter().sum::<f64>() / values.len() as f64,
        min: values.iter().cloned().fold(f64::INFINITY, f64::min),
        max: values.iter().cloned().fold(0.0, f64::max),
    }
}

/// The batch summary (the text report's `=== Batch Summary ===`).
#[derive(Debug, Serialize)]
struct BatchSummary {
    total_seconds: f64,
    completed: usize,
    failed: usize,
    /// Per completed proof: submission to result, as the client saw it.
    wall_seconds: Stats,
    /// Per completed proof: the engine's synthesis + GPU compute times.
    prove_seconds: Stats,
    proofs_per_minute: f64,
    proofs_per_hour: f64,
    seconds_per_proof: f64,
    /// Proofs checked here with bellperson's verifier.
    verified_locally: usize,
    /// Completed proofs not checked here (no local .vk): the daemon's
    /// verification stands behind them.
    verified_by_daemon_only: usize,
    /// Completed proofs of unverifiable inputs (real-structure), not verified at all.
    unverified: usize,
    /// Shaped proofs (no setup to verify against) checked by the engine's
    /// point checks.
    checked_by_engine: usize,
    /// Averages over completed proofs of the engine's phase times, ms.
    phases_avg_ms: BTreeMap<String, f64>,
    #[serde(skip)]
    param_cache: PathBuf,
}

fn summarize(reports: &[Report], total: Duration, proof: &ProofArgs) -> BatchSummary {
    let good: Vec<&Report> = reports.iter().filter(|r| is_good(r)).collect();
    let outcomes: Vec<&Outcome> = good.iter().filter_map(|r| r.outcome.as_ref().ok()).collect();
    let walls: Vec<f64> = good.iter().map(|r| r.wall.as_secs_f64()).collect();
    let proves: Vec<f64> = outcomes
        .iter()
        .map(|o| (o.synthesis_ms + o.gpu_compute_ms) as f64 / 1e3)
        .collect();
    let locally = good.iter().filter(|r| r.verified == Some(true)).count();
    let unverified = good.iter().filter(|r| r.unverifiable.is_some()).count();
    let shaped = proof.proof_type == ProofType::Shaped;
    let avg = |f: &dyn Fn(&Outcome) -> u64| {
        outcomes.iter().map(|o| f(o) as f64).sum::<f64>() / outcomes.len().max(1) as f64
    };
    let phases_avg_ms = [
        ("queue", avg(&|o| o.queue_wait_ms)),
        ("srs_load", avg(&|o| o.srs_load_ms)),
        ("synthesis", avg(&|o| o.synthesis_ms)),
        ("prove", avg(&|o| o.gpu_compute_ms)),
        ("total", avg(&|o| o.total_ms)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let secs = total.as_secs_f64();
    BatchSummary {
        total_seconds: secs,
        completed: good.len(),
        failed: reports.len() - good.len(),
        wall_seconds: stats(&walls),
        prove_seconds: stats(&proves),
        proofs_per_minute: 60.0 * good.len() as f64 / secs,
        proofs_per_hour: 3600.0 * good.len() as f64 / secs,
        seconds_per_proof: secs / good.len().max(1) as f64,
        verified_locally: locally,
        verified_by_daemon_only: if shaped || unverified > 0 {
            0
        } else {
            good.len() - locally
        },
        unverified,
        checked_by_engine: if shaped { good.len() } else { 0 },
        phases_avg_ms,
        param_cache: proof.target.param_cache(),
    }
}

impl BatchSummary {
    fn print(&self, proof: &ProofArgs) {
        let (wall, prove) = (&self.wall_seconds, &self.prove_seconds);
        println!();
        println!("=== Batch Summary ===");
        println!("total time:    {:.1}s", self.total_seconds);
        println!("completed:     {}", self.completed);
        println!("failed:        {}", self.failed);
        println!(
            "wall time:     avg={:.1}s min={:.1}s max={:.1}s",
            wall.avg, wall.min, wall.max
        );
        println!(
            "prove time:    avg={:.1}s min={:.1}s max={:.1}s",
            prove.avg, prove.min, prove.max
        );
        println!(
            "throughput:    {:.3} proofs/min, {:.1} proofs/hour ({:.2}s/proof)",
            self.proofs_per_minute, self.proofs_per_hour, self.seconds_per_proof
        );
        let locally = self.verified_locally;
        if proof.proof_type == ProofType::Shaped {
            println!(
                "checked:       {} by the engine: points valid (shaped proofs cannot verify: no setup; --supraseal compares bytes)",
                self.checked_by_engine
            );
        } else if self.unverified > 0 {
            println!(
                "verified:      {locally}; UNVERIFIED: {} (unverifiable inputs, e.g. real-structure: \
                 proved without verification)",
                self.unverified
            );
        } else if self.verified_by_daemon_only == 0 {
            println!("verified:      {locally}");
        } else {
            println!(
                "verified:      {locally} here ({} verified by the daemon only: no .vk in {})",
                self.verified_by_daemon_only,
                self.param_cache.display()
            );
        }
        let p = &self.phases_avg_ms;
        println!(
            "phases (avg ms): queue={:.0} srs_load={:.0} synthesis={:.0} prove={:.0} total={:.0}",
            p["queue"], p["srs_load"], p["synthesis"], p["prove"], p["total"],
        );
    }
}

/// `single`'s figures in the JSON report.
#[derive(Debug, Serialize)]
struct SingleResults {
    target: TargetRecord,
    proof_type: String,
    circuit_id: Option<String>,
    job_id: String,
    proof: ProofRecord,
    engine_devices: Vec<DeviceRecord>,
}

/// `cuzk-bench single`: one proof, with its details.
pub async fn single(args: ProofArgs) -> anyhow::Result<()> {
    let json = crate::report::start("single", args.json.as_deref());
    let client = Client::connect(&args.target).await?;
    let report = prove_one(&client, &args, 0).await;
    let results = SingleResults {
        target: TargetRecord::of(&args.target),
        proof_type: format!("{:?}", args.proof_type).to_lowercase(),
        circuit_id: report.circuit_id.clone(),
        job_id: report
            .outcome
            .as_ref()
            .map(|o| o.job_id.clone())
            .unwrap_or_default(),
        proof: ProofRecord::of(&report),
        engine_devices: engine_devices(&client).await,
    };
    if let Err(e) = &report.outcome {
        // Not submitted or not awaited: the report says why, then the error.
        json.write(&results)?;
        bail!("{e:#}");
    }
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
    json.write(&results)?;
    if !is_good(&report) {
        bail!("proof not completed and verified");
    }
    Ok(())
}
