//! State shared by the engine's API and its stages, and the one place a job
//! ends ([`finalize`]).

use crate::config::EngineConfig;
use crate::job::{Job, JobStatus};
use crate::metrics::{FailureReason, Metrics};
use crate::plans::PlanSources;
use crate::sched::{Dispatch, Handoff};
use crate::srs::SrsManager;
use crate::sync::lock;
use cuzk_core::{ProofKind, ProverBackend};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Jobs by id, idempotency keys, and finished jobs in the order they ended
/// (for pruning).
#[derive(Debug, Default)]
pub(crate) struct JobTable {
    pub(crate) by_id: HashMap<String, Arc<Job>>,
    pub(crate) by_request: HashMap<String, String>,
    pub(crate) request_of: HashMap<String, String>,
    pub(crate) finished: VecDeque<(Instant, String)>,
}

/// A prover backend and what it is proving now.
#[derive(Debug)]
pub(crate) struct Device {
    pub(crate) backend: Arc<dyn ProverBackend>,
    pub(crate) current: Mutex<Option<(String, ProofKind)>>,
    /// Set when the device failed a partition while another could take it:
    /// it receives no work until then.
    pub(crate) quarantined_until: Mutex<Option<Instant>>,
    /// Partitions it failed.
    pub(crate) failures: std::sync::atomic::AtomicU64,
    /// Preloads it is still taking (each holds the parameters until done).
    pub(crate) preparing: Arc<std::sync::atomic::AtomicUsize>,
}

impl Device {
    pub(crate) fn new(backend: Arc<dyn ProverBackend>) -> Self {
        Self {
            backend,
            current: Mutex::new(None),
            quarantined_until: Mutex::new(None),
            failures: std::sync::atomic::AtomicU64::new(0),
            preparing: Arc::default(),
        }
    }

    /// How long it stays out of service (`None`: it takes work).
    pub(crate) fn quarantine_left(&self) -> Option<std::time::Duration> {
        let until = (*lock(&self.quarantined_until))?;
        until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: EngineConfig,
    /// `config.witness_only`, and every backend takes witness-only partitions.
    pub(crate) witness_only: bool,
    pub(crate) sources: Arc<PlanSources>,
    pub(crate) dispatch: Arc<Dispatch>,
    /// The sequential slots synthesis workers compute in.
    pub(crate) slots: Arc<cuzk_core::cores::Slots>,
    pub(crate) handoff: Handoff,
    pub(crate) srs: Arc<SrsManager>,
    pub(crate) jobs: Mutex<JobTable>,
    pub(crate) devices: Vec<Device>,
    pub(crate) metrics: Metrics,
    pub(crate) next_seq: AtomicU64,
    /// Jobs accepted and not yet final (bounded by `max_queued_jobs`).
    pub(crate) live_jobs: AtomicUsize,
    pub(crate) accepting: AtomicBool,
    pub(crate) started: Instant,
    pub(crate) completed: AtomicU64,
    pub(crate) failed: AtomicU64,
}

/// Fails `job` (once), counting it under `reason`.
pub(crate) fn fail(shared: &Shared, job: &Job, reason: FailureReason, error: String) {
    finalize_as(shared, job, JobStatus::Failed, Vec::new(), error, Some(reason));
}

/// Ends `job` once (later calls do nothing), records metrics and prunes old
/// results.
pub(crate) fn finalize(shared: &Shared, job: &Job, status: JobStatus, proof: Vec<u8>, error: String) {
    finalize_as(shared, job, status, proof, error, None);
}

fn finalize_as(
    shared: &Shared,
    job: &Job,
    status: JobStatus,
    proof: Vec<u8>,
    error: String,
    reason: Option<FailureReason>,
) {
    let label = match status {
        JobStatus::Completed => "completed",
        JobStatus::Failed => "failed",
        JobStatus::Cancelled => "cancelled",
        JobStatus::Timeout => "timeout",
    };
    let counted = || {
        shared.live_jobs.fetch_sub(1, Ordering::SeqCst);
        match status {
            JobStatus::Completed => shared.completed.fetch_add(1, Ordering::SeqCst),
            JobStatus::Failed => shared.failed.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
        let m = &shared.metrics;
        m.finished.with_label_values(&[job.kind.name(), label]).inc();
        if let Some(reason) = reason {
            m.failed
                .with_label_values(&[job.kind.name(), reason.name()])
                .inc();
        }
        m.job_seconds
            .with_label_values(&[job.kind.name()])
            .observe(job.submitted.elapsed().as_secs_f64());
    };
    if !job.finalize(status, proof, error.clone(), counted) {
        return;
    }
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
