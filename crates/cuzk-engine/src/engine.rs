//! The engine: submission, the worker threads, status and shutdown.

use crate::job::{Job, JobResult, JobStatus};
use crate::metrics::Metrics;
use crate::plan::plan_for;
use crate::request::{Priority, ProofKind, ProofRequest};
use crate::sched::{Dispatch, Handoff, Rank, ReadyItem, WorkItem};
use crate::srs::{SrsManager, SrsStatus};
use crate::timeline;
use crate::EngineError;
use cuzk_core::gpu::{GpuOutcome, GpuProver};
use cuzk_core::{finish, proof_to_bytes, prove_start, ParameterCache, PendingProof};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Engine settings (the daemon's TOML maps onto these).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Directory of parameter files (and of generated synthetic ones).
    pub param_cache: PathBuf,
    /// Resident parameter bytes above which idle ones are evicted (0 = no limit).
    pub srs_memory_limit: u64,
    /// Circuit ids loaded at start.
    pub preload: Vec<String>,
    /// Synthesis threads.
    pub partition_workers: usize,
    /// Prover workers per device (the CPU backend counts as one device).
    pub gpu_workers_per_device: usize,
    /// Synthesised partitions that may wait for a prover.
    pub max_gpu_queue_depth: usize,
    /// Bytes granted to partitions in flight.
    pub memory_budget: u64,
    /// How long finished results are kept.
    pub result_ttl: Duration,
    /// How many finished results are kept at most.
    pub result_capacity: usize,
    /// Prove on the GPUs when the build has the CUDA backend and a GPU is present.
    pub use_gpu: bool,
    /// GPU ordinals to use (empty = all visible).
    pub gpu_devices: Vec<u32>,
    /// Where the G1 parameter sections live while a GPU proves with them.
    pub srs_residency: cuzk_core::gpu::Residency,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            param_cache: ParameterCache::default_dir(),
            srs_memory_limit: 0,
            preload: Vec::new(),
            partition_workers: 2,
            gpu_workers_per_device: 2,
            max_gpu_queue_depth: 1,
            memory_budget: 4 << 30,
            result_ttl: Duration::from_secs(600),
            result_capacity: 10_000,
            use_gpu: true,
            gpu_devices: Vec::new(),
            srs_residency: cuzk_core::gpu::Residency::Auto,
        }
    }
}

/// Answer to a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitOutcome {
    /// The job (the existing one for a repeated `request_id`).
    pub job_id: String,
    /// Jobs not yet started that run before this one.
    pub queue_position: u32,
    /// Device it is expected to run on.
    pub assigned_device: String,
    /// Whether `request_id` matched an earlier submission.
    pub duplicate: bool,
}

/// A prover device as reported by status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// Index.
    pub ordinal: u32,
    /// Name.
    pub name: String,
    /// Memory, when it is a GPU.
    pub vram_total_bytes: u64,
    /// Free memory, when it is a GPU.
    pub vram_free_bytes: u64,
    /// Job being proved now (empty if idle).
    pub current_job_id: String,
    /// Its kind.
    pub current_proof_kind: String,
}

/// Pending and running jobs of one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindQueue {
    /// Kind.
    pub kind: ProofKind,
    /// Not started.
    pub pending: u32,
    /// Started, not final.
    pub in_progress: u32,
}

/// Engine-wide status.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    /// Prover devices.
    pub devices: Vec<DeviceStatus>,
    /// Parameters known to the SRS manager.
    pub srs: Vec<SrsStatus>,
    /// Per-kind queues.
    pub queues: Vec<KindQueue>,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Seconds since start.
    pub uptime: Duration,
    /// Memory budget and what is granted now.
    pub memory_budget: u64,
    /// Granted now.
    pub memory_used: u64,
    /// Partitions waiting for synthesis / for a prover.
    pub queued_partitions: (usize, usize),
}

#[derive(Debug, Default)]
struct JobTable {
    by_id: HashMap<String, Arc<Job>>,
    by_request: HashMap<String, String>,
    request_of: HashMap<String, String>,
    finished: VecDeque<(Instant, String)>,
}

/// A prover device: a GPU, or the CPU backend counted as one device.
#[derive(Debug, Default)]
struct Device {
    current: Mutex<Option<(String, ProofKind)>>,
}

struct FinishItem {
    job: Arc<Job>,
    partition: usize,
    pending: PendingProof,
    started: Instant,
    worker: String,
}

#[derive(Debug)]
struct Shared {
    config: EngineConfig,
    dispatch: Arc<Dispatch>,
    handoff: Handoff,
    srs: SrsManager,
    jobs: Mutex<JobTable>,
    devices: Vec<Device>,
    gpu: Option<GpuProver>,
    metrics: Metrics,
    next_seq: AtomicU64,
    accepting: AtomicBool,
    started: Instant,
    completed: AtomicU64,
    failed: AtomicU64,
}

/// The proving engine. Dropping it shuts it down (cancelling what is left).
#[derive(Debug)]
pub struct Engine {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    finish_tx: Mutex<Option<mpsc::Sender<FinishItem>>>,
}

impl std::fmt::Debug for FinishItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishItem")
            .field("job", &self.job.id)
            .field("partition", &self.partition)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Starts the worker threads and preloads the configured parameters.
    pub fn start(config: EngineConfig) -> Result<Self, EngineError> {
        warn_without_huge_pages();
        let cache = ParameterCache::new(&config.param_cache).map_err(|e| EngineError::Srs(e.to_string()))?;
        let metrics = Metrics::new();
        metrics.budget_bytes.set(config.memory_budget as i64);
        let gpu = if config.use_gpu {
            GpuProver::detect(&config.gpu_devices).map(|g| g.with_residency(config.srs_residency))
        } else {
            None
        };
        match &gpu {
            Some(gpu) => {
                for d in gpu.devices() {
                    tracing::info!(
                        device = d.ordinal(),
                        name = %d.info().name,
                        vram_mib = d.info().total_bytes >> 20,
                        "GPU backend"
                    );
                }
            }
            None => tracing::warn!(
                "no GPU backend (no CUDA device, build without --features cuda, or disabled): proving on the CPU"
            ),
        }
        let device_count = gpu.as_ref().map_or(1, |g| g.devices().len());
        let shared = Arc::new(Shared {
            dispatch: Dispatch::new(config.memory_budget),
            handoff: Handoff::new(config.max_gpu_queue_depth),
            srs: SrsManager::new(cache, config.srs_memory_limit),
            jobs: Mutex::new(JobTable::default()),
            devices: (0..device_count).map(|_| Device::default()).collect(),
            gpu,
            metrics,
            next_seq: AtomicU64::new(0),
            accepting: AtomicBool::new(true),
            started: Instant::now(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            config,
        });
        for id in &shared.config.preload {
            let (_, took) = shared.srs.preload(id)?;
            tracing::info!(circuit_id = %id, ms = took.as_millis() as u64, "preloaded");
        }

        let (finish_tx, finish_rx) = mpsc::channel::<FinishItem>();
        let finish_rx = Arc::new(Mutex::new(finish_rx));
        let mut threads = Vec::new();
        let spawn = |name: String, body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(body)
                .map_err(|e| EngineError::Srs(format!("cannot start worker thread: {e}")))
        };
        for w in 0..shared.config.partition_workers.max(1) {
            let shared = Arc::clone(&shared);
            let name = format!("synth-{w}");
            threads.push(spawn(
                name.clone(),
                Box::new(move || synthesis_worker(&shared, &name)),
            )?);
        }
        let provers = shared.devices.len() * shared.config.gpu_workers_per_device.max(1);
        for w in 0..provers {
            let shared = Arc::clone(&shared);
            let tx = finish_tx.clone();
            let device = w % shared.devices.len();
            let name = format!("prover-{device}.{w}");
            threads.push(spawn(
                name.clone(),
                Box::new(move || prover_worker(&shared, device, &name, tx)),
            )?);
        }
        for w in 0..provers {
            let shared = Arc::clone(&shared);
            let rx = Arc::clone(&finish_rx);
            let name = format!("finish-{w}");
            threads.push(spawn(
                name.clone(),
                Box::new(move || finisher(&shared, &name, &rx)),
            )?);
        }
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
            finish_tx: Mutex::new(Some(finish_tx)),
        })
    }

    /// Accepts a proof request. A repeated non-empty `request_id` returns the
    /// job it first created (while that job's record is kept).
    pub fn submit(&self, request: ProofRequest) -> Result<SubmitOutcome, EngineError> {
        let shared = &self.shared;
        if !shared.accepting.load(Ordering::SeqCst) {
            return Err(EngineError::ShuttingDown);
        }
        let mut jobs = lock(&shared.jobs);
        if !request.request_id.is_empty() {
            if let Some(job) = jobs
                .by_request
                .get(&request.request_id)
                .and_then(|id| jobs.by_id.get(id))
            {
                return Ok(SubmitOutcome {
                    job_id: job.id.clone(),
                    queue_position: queue_position(&jobs, job),
                    assigned_device: String::new(),
                    duplicate: true,
                });
            }
        }
        let plan = plan_for(&request)?;
        shared.srs.check_available(&plan.circuit_id())?;
        let priority = request
            .priority
            .unwrap_or_else(|| request.kind.default_priority());
        let seq = shared.next_seq.fetch_add(1, Ordering::SeqCst);
        let id = uuid::Uuid::new_v4().to_string();
        let job = Arc::new(Job::new(id.clone(), seq, request.kind, priority, plan));
        jobs.by_id.insert(id.clone(), Arc::clone(&job));
        if !request.request_id.is_empty() {
            jobs.by_request.insert(request.request_id.clone(), id.clone());
            jobs.request_of.insert(id.clone(), request.request_id.clone());
        }
        let position = queue_position(&jobs, &job);
        drop(jobs);
        for partition in 0..job.plan.partitions() {
            shared.dispatch.push(WorkItem {
                rank: Rank::of(&job, partition),
                job: Arc::clone(&job),
                partition,
            });
        }
        shared
            .metrics
            .submitted
            .with_label_values(&[request.kind.name()])
            .inc();
        tracing::info!(
            job = %id,
            kind = request.kind.name(),
            ?priority,
            partitions = job.plan.partitions(),
            circuit = %job.plan.circuit_id(),
            "job submitted"
        );
        Ok(SubmitOutcome {
            job_id: id,
            queue_position: position,
            // Partitions go to whichever device frees up first.
            assigned_device: String::new(),
            duplicate: false,
        })
    }

    fn job(&self, job_id: &str) -> Result<Arc<Job>, EngineError> {
        lock(&self.shared.jobs)
            .by_id
            .get(job_id)
            .cloned()
            .ok_or_else(|| EngineError::NotFound(job_id.to_string()))
    }

    /// Waits for the job's final status, or until `timeout` (`None` waits
    /// for ever), in which case the result says `Timeout` and the job goes on.
    pub async fn wait(&self, job_id: &str, timeout: Option<Duration>) -> Result<JobResult, EngineError> {
        let job = self.job(job_id)?;
        let mut rx = job.subscribe();
        let wait = rx.wait_for(|r| r.is_some());
        let outcome = match timeout {
            None => Some(wait.await),
            Some(limit) => tokio::time::timeout(limit, wait).await.ok(),
        };
        match outcome {
            Some(Ok(result)) => Ok(result.clone().expect("waited for Some")),
            // The sender lives in the job we hold, so the channel cannot close.
            Some(Err(_)) => Err(EngineError::NotFound(job_id.to_string())),
            None => Ok(JobResult {
                job_id: job_id.to_string(),
                status: JobStatus::Timeout,
                proof: Vec::new(),
                error: format!(
                    "not finished after {} ms",
                    timeout.unwrap_or_default().as_millis()
                ),
                queue_wait: Duration::ZERO,
                srs_load: Duration::ZERO,
                synthesis: Duration::ZERO,
                prove: Duration::ZERO,
                total: job.submitted.elapsed(),
            }),
        }
    }

    /// The final result if the job has one.
    pub fn result(&self, job_id: &str) -> Result<Option<JobResult>, EngineError> {
        Ok(self.job(job_id)?.result())
    }

    /// Cancels a queued or running job; returns whether it was running. A job
    /// that already ended is left as it is.
    pub fn cancel(&self, job_id: &str) -> Result<bool, EngineError> {
        let job = self.job(job_id)?;
        let was_running = job.is_started() && !job.is_final();
        finalize(
            &self.shared,
            &job,
            JobStatus::Cancelled,
            Vec::new(),
            "cancelled by request".into(),
        );
        Ok(was_running)
    }

    /// Loads a circuit's parameters now; returns whether they were already
    /// resident and how long the load took.
    pub fn preload_srs(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        self.shared.srs.preload(circuit_id)
    }

    /// Drops a circuit's resident parameters; returns whether they were
    /// resident and the bytes freed now.
    pub fn evict_srs(&self, circuit_id: &str) -> (bool, u64) {
        self.shared.srs.evict(circuit_id)
    }

    /// Engine-wide status.
    pub fn status(&self) -> EngineStatus {
        let shared = &self.shared;
        let jobs = lock(&shared.jobs);
        let queues = ProofKind::ALL
            .iter()
            .map(|&kind| {
                let live = jobs.by_id.values().filter(|j| j.kind == kind && !j.is_final());
                let (mut pending, mut in_progress) = (0, 0);
                for job in live {
                    if job.is_started() {
                        in_progress += 1;
                    } else {
                        pending += 1;
                    }
                }
                KindQueue {
                    kind,
                    pending,
                    in_progress,
                }
            })
            .collect();
        drop(jobs);
        let devices = shared
            .devices
            .iter()
            .enumerate()
            .map(|(ordinal, device)| {
                let current = lock(&device.current).clone();
                let gpu = shared.gpu.as_ref().map(|g| &g.devices()[ordinal]);
                DeviceStatus {
                    ordinal: gpu.map_or(ordinal, |g| g.ordinal()) as u32,
                    name: gpu.map_or_else(
                        || "CPU backend (no GPU in use)".to_string(),
                        |g| g.info().name.clone(),
                    ),
                    vram_total_bytes: gpu.map_or(0, |g| g.info().total_bytes),
                    vram_free_bytes: gpu.map_or(0, |g| g.free_bytes()),
                    current_job_id: current.as_ref().map(|c| c.0.clone()).unwrap_or_default(),
                    current_proof_kind: current.map(|c| c.1.name().to_string()).unwrap_or_default(),
                }
            })
            .collect();
        let (waiting, used, total) = shared.dispatch.snapshot();
        EngineStatus {
            devices,
            srs: shared.srs.status(),
            queues,
            completed: shared.completed.load(Ordering::SeqCst),
            failed: shared.failed.load(Ordering::SeqCst),
            uptime: shared.started.elapsed(),
            memory_budget: total,
            memory_used: used,
            queued_partitions: (waiting, shared.handoff.len()),
        }
    }

    /// Prometheus text for all engine metrics.
    pub fn metrics_text(&self) -> String {
        let shared = &self.shared;
        let (waiting, used, _) = shared.dispatch.snapshot();
        let m = &shared.metrics;
        m.dispatch_queue.set(waiting as i64);
        m.prover_queue.set(shared.handoff.len() as i64);
        m.budget_used_bytes.set(used as i64);
        m.uptime_seconds.set(shared.started.elapsed().as_secs_f64());
        let resident: u64 = shared
            .srs
            .status()
            .iter()
            .filter(|s| s.tier != crate::srs::Tier::Cold)
            .map(|s| s.size_bytes)
            .sum();
        m.srs_resident_bytes.set(resident as i64);
        m.render()
    }

    /// Whether new submissions are accepted.
    pub fn is_accepting(&self) -> bool {
        self.shared.accepting.load(Ordering::SeqCst)
    }

    /// Stops accepting, lets jobs in flight finish for up to `grace`, cancels
    /// the rest (each gets a final status), and stops the workers.
    pub fn shutdown(&self, grace: Duration) {
        let shared = &self.shared;
        shared.accepting.store(false, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        loop {
            let live: Vec<Arc<Job>> = lock(&shared.jobs)
                .by_id
                .values()
                .filter(|j| !j.is_final())
                .cloned()
                .collect();
            if live.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                for job in live {
                    finalize(
                        shared,
                        &job,
                        JobStatus::Cancelled,
                        Vec::new(),
                        "engine shutting down".into(),
                    );
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        shared.dispatch.close();
        shared.handoff.close();
        lock(&self.finish_tx).take();
        let threads = std::mem::take(&mut *lock(&self.threads));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown(Duration::ZERO);
    }
}

/// Jobs not yet started that rank at or above `job`.
fn queue_position(jobs: &JobTable, job: &Job) -> u32 {
    jobs.by_id
        .values()
        .filter(|other| {
            other.id != job.id
                && !other.is_final()
                && !other.is_started()
                && (other.priority, std::cmp::Reverse(other.seq)) > (job.priority, std::cmp::Reverse(job.seq))
        })
        .count() as u32
}

/// Warns when large allocations will not get transparent huge pages: the
/// kernel gives them only on request (`madvise` mode) and glibc asks only
/// when told to. At full size the 4 KiB page faults on every partition's
/// 17 GB cost more than generating its witness (BENCHMARKS.md: 45.6 s ->
/// 32.9 s per 32 GiB-shaped proof on the H200 with huge pages).
fn warn_without_huge_pages() {
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    if mode.contains("[madvise]") && !tunables.contains("glibc.malloc.hugetlb") {
        tracing::warn!(
            "transparent huge pages are on request only and glibc does not request them: \
             start with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for large partitions"
        );
    }
}

/// Ends `job` once (later calls do nothing), records metrics and prunes old
/// results.
fn finalize(shared: &Shared, job: &Job, status: JobStatus, proof: Vec<u8>, error: String) {
    if !job.finalize(status, proof, error.clone()) {
        return;
    }
    let label = match status {
        JobStatus::Completed => "completed",
        JobStatus::Failed => "failed",
        JobStatus::Cancelled => "cancelled",
        JobStatus::Timeout => "timeout",
    };
    match status {
        JobStatus::Completed => shared.completed.fetch_add(1, Ordering::SeqCst),
        JobStatus::Failed => shared.failed.fetch_add(1, Ordering::SeqCst),
        _ => 0,
    };
    let m = &shared.metrics;
    m.finished.with_label_values(&[job.kind.name(), label]).inc();
    m.job_seconds
        .with_label_values(&[job.kind.name()])
        .observe(job.submitted.elapsed().as_secs_f64());
    if status == JobStatus::Completed {
        tracing::info!(job = %job.id, ms = job.submitted.elapsed().as_millis() as u64, "job completed");
    } else {
        tracing::warn!(job = %job.id, status = label, %error, "job ended");
    }
    shared.dispatch.poke();

    let mut jobs = lock(&shared.jobs);
    jobs.finished.push_back((Instant::now(), job.id.clone()));
    let ttl = shared.config.result_ttl;
    while let Some((at, id)) = jobs.finished.front().cloned() {
        if jobs.finished.len() <= shared.config.result_capacity && at.elapsed() < ttl {
            break;
        }
        jobs.finished.pop_front();
        jobs.by_id.remove(&id);
        if let Some(request) = jobs.request_of.remove(&id) {
            jobs.by_request.remove(&request);
        }
    }
}

fn synthesis_worker(shared: &Shared, name: &str) {
    while let Some((item, permit)) = shared.dispatch.next() {
        let job = item.job;
        if job.is_final() {
            continue;
        }
        job.mark_picked();
        let srs = match job.srs(&shared.srs) {
            Ok(srs) => srs,
            Err(e) => {
                finalize(shared, &job, JobStatus::Failed, Vec::new(), e.to_string());
                continue;
            }
        };
        timeline::event("synthesis_start", &job.id, item.partition, name);
        let started = Instant::now();
        let synthesized = job.plan.synthesize(item.partition);
        let took = started.elapsed();
        timeline::event("synthesis_end", &job.id, item.partition, name);
        shared
            .metrics
            .phase_seconds
            .with_label_values(&["synthesis"])
            .observe(took.as_secs_f64());
        job.add_synthesis(took);
        let assignment = match synthesized {
            Ok(assignment) => assignment,
            Err(e) => {
                let error = format!("partition {} synthesis failed: {e}", item.partition);
                finalize(shared, &job, JobStatus::Failed, Vec::new(), error);
                continue;
            }
        };
        if job.is_final() {
            continue;
        }
        timeline::event("queued_for_prover", &job.id, item.partition, name);
        let ready = ReadyItem {
            rank: item.rank,
            job: Arc::clone(&job),
            partition: item.partition,
            assignment,
            params: Arc::clone(srs.params()),
            permit,
            queued_at: Instant::now(),
        };
        if shared.handoff.push(ready).is_err() {
            return; // closed: shutting down
        }
    }
}

fn prover_worker(shared: &Shared, device: usize, name: &str, finished: mpsc::Sender<FinishItem>) {
    while let Some(ready) = shared.handoff.pop() {
        let ReadyItem {
            job,
            partition,
            assignment,
            params,
            permit,
            queued_at,
            ..
        } = ready;
        if job.is_final() {
            continue;
        }
        timeline::event("picked_up", &job.id, partition, name);
        shared
            .metrics
            .phase_seconds
            .with_label_values(&["prover_queue"])
            .observe(queued_at.elapsed().as_secs_f64());
        *lock(&shared.devices[device].current) = Some((job.id.clone(), job.kind));
        timeline::event("prover_start", &job.id, partition, name);
        let started = Instant::now();
        let randomness = job.plan.randomness(partition);
        let pending = match &shared.gpu {
            Some(gpu) => match gpu.prove_start(device, assignment, &params, randomness) {
                GpuOutcome::Started(pending) => Ok(pending),
                GpuOutcome::Failed(e) => Err(e),
                GpuOutcome::Fallback { reason, assignment } => {
                    tracing::warn!(job = %job.id, partition, %reason, "GPU could not prove; using the CPU backend for this partition");
                    prove_start(assignment, &params, randomness)
                }
            },
            None => prove_start(assignment, &params, randomness),
        };
        // The a/b/c vectors are gone: give the memory back now, before the
        // G2 MSM and epilogue, so the next partition can be synthesised.
        drop(permit);
        match &pending {
            Ok(p) => {
                let t = p.timings();
                if !t.gpu_region.is_zero() {
                    shared
                        .metrics
                        .gpu_busy_seconds
                        .with_label_values(&[&device.to_string()])
                        .inc_by(t.gpu_region.as_secs_f64());
                }
                timeline::event_with(
                    "prover_gpu_end",
                    &job.id,
                    partition,
                    name,
                    &format!(
                        "lock_wait_ms={} gpu_ms={} upload_ms={} ntt_ms={} h_msm_ms={}",
                        t.lock_wait.as_millis(),
                        t.gpu_region.as_millis(),
                        t.upload.as_millis(),
                        t.h_fft.as_millis(),
                        t.h_msm.as_millis()
                    ),
                );
            }
            Err(_) => timeline::event("prover_gpu_end", &job.id, partition, name),
        }
        shared
            .metrics
            .phase_seconds
            .with_label_values(&["prove_start"])
            .observe(started.elapsed().as_secs_f64());
        *lock(&shared.devices[device].current) = None;
        match pending {
            Ok(pending) => {
                let item = FinishItem {
                    job,
                    partition,
                    pending,
                    started,
                    worker: name.to_string(),
                };
                if finished.send(item).is_err() {
                    return;
                }
            }
            Err(e) => {
                let error = format!("partition {partition} prove failed: {e}");
                finalize(shared, &job, JobStatus::Failed, Vec::new(), error);
            }
        }
    }
}

fn finisher(shared: &Shared, name: &str, items: &Mutex<mpsc::Receiver<FinishItem>>) {
    loop {
        let item = match lock(items).recv() {
            Ok(item) => item,
            Err(_) => return,
        };
        let FinishItem {
            job,
            partition,
            pending,
            started,
            worker,
        } = item;
        let finished = Instant::now();
        let outcome = finish(pending);
        shared
            .metrics
            .phase_seconds
            .with_label_values(&["finish"])
            .observe(finished.elapsed().as_secs_f64());
        timeline::event("prover_end", &job.id, partition, &worker);
        let proof = match outcome {
            Ok((proof, _)) => proof,
            Err(e) => {
                let error = format!("partition {partition} finish failed: {e}");
                finalize(shared, &job, JobStatus::Failed, Vec::new(), error);
                continue;
            }
        };
        if job.is_final() {
            continue;
        }
        let Some(proofs) = job.record(partition, proof, started.elapsed()) else {
            continue;
        };
        // Whole proof: verify every partition before reporting COMPLETED.
        let verdict = job
            .srs(&shared.srs)
            .map_err(|e| e.to_string())
            .and_then(|srs| job.plan.verify(srs.params(), &proofs));
        tracing::debug!(job = %job.id, finisher = name, "assembled");
        match verdict {
            Ok(()) => {
                let bytes = proofs.iter().flat_map(proof_to_bytes).collect();
                finalize(shared, &job, JobStatus::Completed, bytes, String::new());
            }
            Err(error) => finalize(shared, &job, JobStatus::Failed, Vec::new(), error),
        }
    }
}

/// `Priority` is used by the daemon too.
impl Priority {
    /// From the `cuzk.v1` enum number (0 = unspecified).
    pub fn from_wire(value: i32) -> Option<Option<Priority>> {
        match value {
            0 => Some(None),
            1 => Some(Some(Priority::Low)),
            2 => Some(Some(Priority::Normal)),
            3 => Some(Some(Priority::High)),
            4 => Some(Some(Priority::Critical)),
            _ => None,
        }
    }
}
