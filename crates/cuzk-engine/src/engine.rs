//! The engine's public API: start it with its backends and plan sources,
//! submit, await, cancel, status, shutdown. The pipeline itself is in
//! [`crate::stages`].

use crate::config::EngineConfig;
use crate::job::{Job, JobResult, JobStatus};
use crate::metrics::FailureReason;
use crate::metrics::Metrics;
use crate::plans::PlanSources;
use crate::sched::{Dispatch, EvictIdle, Handoff, Lane, Rank, Reserved, WorkItem};
use crate::srs::SrsManager;
use crate::stages::{self, finish::FinishItem};
use crate::state::{fail, finalize, Device, JobTable, Shared};
use crate::status::{DeviceStatus, EngineStatus, KindQueue};
use crate::sync::lock;
use crate::EngineError;
use cuzk_core::{CpuBackend, PlanSource, ProofKind, ProofRequest, ProverBackend};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// A request that passed admission: its plan, and whether its partitions
/// are synthesised as witnesses only.
struct Admitted {
    plan: Box<dyn cuzk_core::ProofPlan>,
    witness_only: bool,
}

/// The proving engine. Dropping it shuts it down (cancelling what is left).
#[derive(Debug)]
pub struct Engine {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    finish_tx: Mutex<Option<mpsc::Sender<FinishItem>>>,
    /// Dropped at shutdown, which wakes and ends the janitor.
    janitor_tx: Mutex<Option<mpsc::Sender<()>>>,
}

impl Engine {
    /// Starts the worker threads (`config.workers_per_backend` prover
    /// workers for each of `backends`; the CPU backend when it is empty)
    /// and, on a thread of its own, preloads the configured parameters.
    /// Requests are planned by the first of `sources` that claims them.
    pub fn start(
        config: EngineConfig,
        backends: Vec<Arc<dyn ProverBackend>>,
        sources: Vec<Arc<dyn PlanSource>>,
    ) -> Result<Self, EngineError> {
        warn_without_huge_pages();
        let metrics = Metrics::new();
        metrics.budget_bytes.set(config.memory_budget as i64);
        let backends = if backends.is_empty() {
            vec![Arc::new(CpuBackend) as Arc<dyn ProverBackend>]
        } else {
            backends
        };
        for backend in &backends {
            let status = backend.status();
            tracing::info!(
                backend = %status.name,
                memory_mib = status.memory_total_bytes >> 20,
                "prover backend"
            );
        }
        let sources = Arc::new(PlanSources::new(sources));
        let witness_only = config.witness_only && backends.iter().all(|b| b.takes_witness());
        let dispatch = Dispatch::new(config.memory_budget, config.post_reserve, {
            let sources = Arc::downgrade(&sources);
            Reserved(Box::new(move || {
                sources
                    .upgrade()
                    .map_or(0, |sources| sources.r1cs_bytes() + sources.held_bytes())
            }))
        });
        let srs = Arc::new(SrsManager::new(
            Arc::clone(&sources),
            config.srs_memory_limit,
            Arc::clone(&dispatch) as Arc<dyn crate::srs::MemoryBudget>,
        ));
        {
            let srs = Arc::downgrade(&srs);
            let sources = Arc::downgrade(&sources);
            dispatch.set_evict_idle(EvictIdle(Box::new(move |bytes| {
                // What the sources keep idle (spare witness vectors) goes
                // before parameters, which cost a reload.
                let spares = sources
                    .upgrade()
                    .map_or(0, |sources| sources.release(Duration::ZERO));
                match spares >= bytes {
                    true => spares,
                    false => spares + srs.upgrade().map_or(0, |srs| srs.evict_idle_for(bytes - spares)),
                }
            })));
        }
        let shared = Arc::new(Shared {
            witness_only,
            dispatch,
            handoff: Handoff::new(config.max_prover_queue_depth),
            slots: cuzk_core::cores::Slots::new(match config.sequential_slots {
                0 => config.partition_workers,
                n => n,
            }),
            srs,
            sources,
            jobs: Mutex::new(JobTable::default()),
            devices: backends.into_iter().map(Device::new).collect(),
            metrics,
            next_seq: AtomicU64::new(0),
            live_jobs: std::sync::atomic::AtomicUsize::new(0),
            accepting: AtomicBool::new(true),
            started: Instant::now(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            config,
        });
        // Each GPU's busy counter exists from the start, at 0, so a
        // dashboard shows an idle GPU rather than no GPU.
        for (index, device) in shared.devices.iter().enumerate() {
            shared
                .metrics
                .device_failures
                .with_label_values(&[&index.to_string()]);
            if device.backend.status().kind == cuzk_core::backend::BackendKind::Gpu {
                shared
                    .metrics
                    .gpu_busy_seconds
                    .with_label_values(&[&index.to_string()]);
            }
        }
        let (finish_tx, finish_rx) = mpsc::channel::<FinishItem>();
        let finish_rx = Arc::new(Mutex::new(finish_rx));
        let mut threads = Vec::new();
        let spawn = |name: String, body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(body)
                .map_err(|e| EngineError::Internal(format!("cannot start worker thread: {e}")))
        };
        // The general workers, then a worker of each lane kept for PoSt
        // (synthesis, and prover on every device).
        let synthesis_lanes = (0..shared.config.partition_workers.max(1))
            .map(|w| (Lane::GENERAL, format!("synth-{w}")))
            .chain(Lane::KEPT_FOR_POST.map(|lane| (lane, format!("synth-{}", lane.suffix()))));
        for (lane, name) in synthesis_lanes {
            let shared = Arc::clone(&shared);
            threads.push(spawn(
                name.clone(),
                Box::new(move || stages::synthesis::worker(&shared, lane, &name)),
            )?);
        }
        let provers = shared.devices.len() * shared.config.workers_per_backend.max(1);
        let prover_lanes = (0..provers)
            .map(|w| {
                (
                    w % shared.devices.len(),
                    Lane::GENERAL,
                    format!("prover-{}.{w}", w % shared.devices.len()),
                )
            })
            .chain((0..shared.devices.len()).flat_map(|device| {
                Lane::KEPT_FOR_POST.map(|lane| (device, lane, format!("prover-{device}.{}", lane.suffix())))
            }));
        for (device, lane, name) in prover_lanes {
            let shared = Arc::clone(&shared);
            let tx = finish_tx.clone();
            threads.push(spawn(
                name.clone(),
                Box::new(move || stages::prove::worker(&shared, device, lane, &name, tx)),
            )?);
        }
        for w in 0..provers {
            let shared = Arc::clone(&shared);
            let rx = Arc::clone(&finish_rx);
            let name = format!("finish-{w}");
            threads.push(spawn(
                name.clone(),
                Box::new(move || stages::finish::worker(&shared, &name, &rx)),
            )?);
        }
        let (janitor_tx, janitor_rx) = mpsc::channel::<()>();
        {
            let shared = Arc::clone(&shared);
            threads.push(spawn(
                "janitor".into(),
                Box::new(move || janitor(&shared, &janitor_rx)),
            )?);
        }
        // The configured preloads run on a thread of their own, so the
        // engine serves from its start (a status call answers at once),
        // and a request that comes during a preload is accepted and waits
        // for the same parameters and R1CS (each loaded once) rather than
        // loading them again. A preload that
        // fails (a file not yet downloaded, a typo) is logged and skipped:
        // the daemon serves everything else, and a job that needs the
        // missing parameters is refused at submission, naming the file.
        if !shared.config.preload.is_empty() {
            let shared = Arc::clone(&shared);
            threads.push(spawn(
                "preload".into(),
                Box::new(move || {
                    for id in &shared.config.preload {
                        match preload(&shared, id) {
                            Ok((_, took)) => {
                                tracing::info!(circuit_id = %id, ms = took.as_millis() as u64, "preloaded")
                            }
                            Err(e) => tracing::error!(
                                circuit_id = %id,
                                error = %e,
                                "preload failed; continuing without it"
                            ),
                        }
                    }
                }),
            )?);
        }
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
            finish_tx: Mutex::new(Some(finish_tx)),
            janitor_tx: Mutex::new(Some(janitor_tx)),
        })
    }

    /// Accepts a proof request. A repeated non-empty `request_id` returns the
    /// job it first created (while that job's record is kept).
    ///
    /// The plan is made (and, for Filecoin proofs, the vanilla proofs
    /// checked) outside the engine-wide jobs lock, so a slow or hostile
    /// request never stalls status, awaits or other submissions. Refused:
    /// requests whose partitions could never fit the memory budget, and any
    /// request while `max_queued_jobs` jobs are unfinished.
    pub fn submit(&self, request: ProofRequest) -> Result<SubmitOutcome, EngineError> {
        let shared = &self.shared;
        if !shared.accepting.load(Ordering::SeqCst) {
            return Err(EngineError::ShuttingDown);
        }
        if let Some(outcome) = self.duplicate_of(&request) {
            return Ok(outcome);
        }
        let Admitted { plan, witness_only } = self.admit(&request)?;
        let mut jobs = lock(&shared.jobs);
        // Another submission with the same request id may have won the race
        // while this one was being planned.
        if let Some(outcome) = duplicate(&jobs, &request) {
            return Ok(outcome);
        }
        let live = shared.live_jobs.load(Ordering::SeqCst);
        if live >= shared.config.max_queued_jobs {
            return Err(EngineError::ResourceExhausted(format!(
                "{live} jobs are queued or running, the most the engine accepts ([pipeline] max_queued_jobs)"
            )));
        }
        let priority = request
            .priority
            .unwrap_or_else(|| request.kind.default_priority());
        let seq = shared.next_seq.fetch_add(1, Ordering::SeqCst);
        let id = uuid::Uuid::new_v4().to_string();
        let job = Arc::new(Job::new(
            id.clone(),
            seq,
            request.kind,
            priority,
            plan,
            witness_only,
        ));
        jobs.by_id.insert(id.clone(), Arc::clone(&job));
        shared.live_jobs.fetch_add(1, Ordering::SeqCst);
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
        self.acquire_parameters(&job);
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

    /// Runs every check [`Engine::submit`] runs before queuing (the plan,
    /// the parameters' availability and memory, a partition against the
    /// budget) without queuing anything: a pool of daemons checks a request
    /// this way before storing it, so that what one daemon would refuse is
    /// refused at submission rather than claimed and retried.
    pub fn check(&self, request: &ProofRequest) -> Result<(), EngineError> {
        if !self.shared.accepting.load(Ordering::SeqCst) {
            return Err(EngineError::ShuttingDown);
        }
        self.admit(request).map(|_| ())
    }

    /// The plan of `request` and whether it goes the witness-only way,
    /// once it passed the checks of admission.
    fn admit(&self, request: &ProofRequest) -> Result<Admitted, EngineError> {
        let shared = &self.shared;
        // A panic inside a plan source (third-party parsing) refuses the
        // request instead of taking the daemon's thread with it.
        let plan = stages::guarded("planning the request", || Ok(shared.sources.plan(request)))
            .map_err(EngineError::InvalidArgument)??;
        let budget = shared.config.memory_budget;
        let witness_only = shared.witness_only && plan.witness_bytes().is_some();
        let partition_bytes = match witness_only {
            true => plan.witness_bytes().unwrap_or_else(|| plan.partition_bytes()),
            false => plan.partition_bytes(),
        };
        if partition_bytes > budget {
            return Err(EngineError::ResourceExhausted(format!(
                "a partition of this request needs {} MiB in flight, more than the whole memory budget of {} MiB \
                 ([memory] total_budget)",
                partition_bytes >> 20,
                budget >> 20
            )));
        }
        shared.srs.admit(&plan.circuit_id(), partition_bytes)?;
        Ok(Admitted { plan, witness_only })
    }

    /// Gives `job` its parameters: at once when they are resident, else
    /// on a thread of its own, so that a load or generation holds no
    /// synthesis worker and delays no job whose parameters are resident.
    /// The job's partitions leave the dispatcher once it has them.
    fn acquire_parameters(&self, job: &Arc<Job>) {
        // A recipe is third-party code: a panic fails the job, it does
        // not leave it waiting for parameters that never come.
        let acquire = |shared: &Shared, job: &Job| {
            let acquired = stages::guarded("loading the parameters", || {
                job.srs(&shared.srs, &|| shared.dispatch.poke())
                    .map_err(|e| e.to_string())
            });
            match acquired {
                Ok(_) => shared.dispatch.poke(),
                Err(e) => fail(shared, job, FailureReason::Parameters, e),
            }
        };
        if self.shared.srs.is_ready(&job.plan.circuit_id()) {
            acquire(&self.shared, job);
            return;
        }
        let (shared, loading) = (Arc::clone(&self.shared), Arc::clone(job));
        let spawned = std::thread::Builder::new()
            .name("srs-load".into())
            .spawn(move || acquire(&shared, &loading));
        if let Err(e) = spawned {
            let error = format!("cannot start the parameter load: {e}");
            fail(&self.shared, job, FailureReason::Parameters, error);
        }
    }

    fn duplicate_of(&self, request: &ProofRequest) -> Option<SubmitOutcome> {
        if request.request_id.is_empty() {
            return None;
        }
        duplicate(&lock(&self.shared.jobs), request)
    }

    fn job(&self, job_id: &str) -> Result<Arc<Job>, EngineError> {
        lock(&self.shared.jobs)
            .by_id
            .get(job_id)
            .cloned()
            .ok_or_else(|| EngineError::not_found(job_id))
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
            Some(Ok(result)) => {
                job.collected.store(true, Ordering::SeqCst);
                Ok(result.clone().expect("waited for Some"))
            }
            // The sender lives in the job we hold, so the channel cannot close.
            Some(Err(_)) => Err(EngineError::not_found(job_id)),
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
        let job = self.job(job_id)?;
        let result = job.result();
        if result.is_some() {
            job.collected.store(true, Ordering::SeqCst);
        }
        Ok(result)
    }

    /// Jobs accepted and not yet final.
    pub fn unfinished_jobs(&self) -> usize {
        self.shared.live_jobs.load(Ordering::SeqCst)
    }

    /// Jobs that ended since `since` whose result no client has been given
    /// yet: a daemon shutting down keeps answering awaits while there are
    /// any (and its grace period lasts), so results finished during
    /// shutdown can still be collected.
    pub fn uncollected_since(&self, since: Instant) -> usize {
        let jobs = lock(&self.shared.jobs);
        jobs.finished
            .iter()
            .rev()
            .take_while(|(at, _)| *at >= since)
            .filter(|(_, id)| {
                jobs.by_id
                    .get(id)
                    .is_some_and(|job| !job.collected.load(Ordering::SeqCst))
            })
            .count()
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
    /// The devices take them (and the circuit's compiled R1CS, when its
    /// source has it) in the background: see [`preload`].
    pub fn preload_srs(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        preload(&self.shared, circuit_id)
    }

    /// Drops a circuit's resident parameters; returns whether they were
    /// resident and the bytes freed now.
    /// The circuit's compiled R1CS goes too (it is recorded again on
    /// next use).
    pub fn evict_srs(&self, circuit_id: &str) -> (bool, u64) {
        let r1cs = self.shared.sources.evict_r1cs(circuit_id);
        if r1cs > 0 {
            tracing::info!(circuit_id, bytes = r1cs, "compiled R1CS evicted");
            self.shared.dispatch.poke();
        }
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
            .map(|device| {
                let current = lock(&device.current).clone();
                DeviceStatus {
                    quarantine_left: device.quarantine_left(),
                    failures: device.failures.load(Ordering::SeqCst),
                    preparing: device.preparing.load(Ordering::SeqCst),
                    backend: device.backend.status(),
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
            compiled_r1cs: shared.sources.r1cs_snapshot(),
            queued_partitions: (waiting, shared.handoff.len()),
            sequential_slots: shared.slots.snapshot(),
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
        m.r1cs_bytes.set(shared.sources.r1cs_bytes() as i64);
        m.spare_witness_bytes.set(shared.sources.held_bytes() as i64);
        m.uptime_seconds.set(shared.started.elapsed().as_secs_f64());
        // The sources count on their own (monotonic): the counters catch up.
        for (source, event, count) in shared.sources.counters() {
            let counter = m.source_events.with_label_values(&[source, event]);
            counter.inc_by(count.saturating_sub(counter.get()));
        }
        let resident: u64 = shared
            .srs
            .status()
            .iter()
            .filter(|s| s.tier != crate::srs::Tier::Cold)
            .map(|s| s.size_bytes)
            .sum();
        m.srs_resident_bytes.set(resident as i64);
        for (index, device) in shared.devices.iter().enumerate() {
            let label = index.to_string();
            m.device_in_service
                .with_label_values(&[&label])
                .set(device.quarantine_left().is_none() as i64);
            let status = device.backend.status();
            if status.memory_total_bytes > 0 {
                m.device_memory
                    .with_label_values(&[&label, "total"])
                    .set(status.memory_total_bytes as i64);
                m.device_memory
                    .with_label_values(&[&label, "free"])
                    .set(status.memory_free_bytes as i64);
            }
        }
        // Evicted circuits leave the series.
        m.srs_bytes.reset();
        for srs in shared.srs.status() {
            let tier = match srs.tier {
                crate::srs::Tier::Hot => "hot",
                crate::srs::Tier::Warm => "warm",
                crate::srs::Tier::Cold => "cold",
            };
            m.srs_bytes
                .with_label_values(&[&srs.circuit_id, tier])
                .set(srs.size_bytes as i64);
        }
        {
            let jobs = lock(&shared.jobs);
            m.set_jobs_queued(
                jobs.by_id
                    .values()
                    .filter(|job| !job.is_final())
                    .map(|job| (job.priority, job.is_started())),
            );
        }
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
        lock(&self.janitor_tx).take();
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

/// Housekeeping that must happen even when no job arrives: parameters and
/// compiled R1CS idle past `srs_idle_evict` are evicted (the budget the
/// R1CS took is free again). Ends when the engine shuts down.
fn janitor(shared: &Shared, stop: &mpsc::Receiver<()>) {
    let Some(idle) = shared.config.srs_idle_evict else {
        let _ = stop.recv();
        return;
    };
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(tick) {
        shared.srs.evict_idle(idle);
        shared.sources.evict_idle_r1cs(idle);
        shared.sources.release(idle);
        shared.dispatch.poke();
    }
}

/// The job an earlier submission with `request`'s id made, if any.
fn duplicate(jobs: &JobTable, request: &ProofRequest) -> Option<SubmitOutcome> {
    if request.request_id.is_empty() {
        return None;
    }
    let job = jobs
        .by_request
        .get(&request.request_id)
        .and_then(|id| jobs.by_id.get(id))?;
    Some(SubmitOutcome {
        job_id: job.id.clone(),
        queue_position: queue_position(jobs, job),
        assigned_device: String::new(),
        duplicate: true,
    })
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
/// vectors cost more than generating its witness (BENCHMARKS.md,
/// "Full-scale 32 GiB-shaped PoRep on the H200 (issue 6)").
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

/// Loads `circuit_id`'s parameters (and its source's compiled R1CS beside
/// them) now, then has every device take both on a thread of its own
/// ([`ProverBackend::prepare`]): the caller (the daemon's start, a
/// PreloadSRS) goes on while they are copied, and the first partition,
/// should it come sooner, waits for the device lock the copy holds instead
/// of copying them itself. Returns whether the parameters were resident
/// and how long loading them took.
fn preload(shared: &Shared, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
    let preloaded = shared.srs.preload(circuit_id)?;
    for (index, device) in shared.devices.iter().enumerate() {
        let backend = Arc::clone(&device.backend);
        // The parameters themselves, not the handle: a handle would mark
        // them in use (HOT, never evicted) while the copy runs.
        let params = Arc::clone(preloaded.handle.params());
        let r1cs = preloaded.r1cs.clone();
        let id = circuit_id.to_string();
        let preparing = PreparingGuard::enter(&device.preparing);
        let spawned = std::thread::Builder::new()
            .name(format!("prepare-{index}"))
            .spawn(move || {
                // Locals drop in reverse: the parameters before the count.
                let _preparing = preparing;
                let params = params;
                let started = Instant::now();
                match backend.prepare(&params, r1cs.as_ref()) {
                    Ok(Some(what)) => tracing::info!(
                        circuit_id = %id,
                        device = index,
                        ms = started.elapsed().as_millis() as u64,
                        "preload: {what}"
                    ),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(
                        circuit_id = %id,
                        device = index,
                        error = %e,
                        "preload: the device did not take the circuit; its first partition will"
                    ),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(device = index, error = %e, "preload: cannot start the device's preparation");
        }
    }
    Ok((preloaded.already_resident, preloaded.load_time))
}

/// Counts a device's preparation from before its thread starts until the
/// thread (or a failed spawn) drops it, after the parameters it holds.
struct PreparingGuard(Arc<std::sync::atomic::AtomicUsize>);

impl PreparingGuard {
    fn enter(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(count))
    }
}

impl Drop for PreparingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
