//! Cluster mode (`[cluster] database`): the daemons of a pool share one
//! PostgreSQL job queue (`cuzk-cluster`), so a job outlives the daemon that
//! held it.
//!
//! - Any daemon accepts SubmitProof/Prove: the request is checked as a
//!   single daemon checks it, then stored (idempotent by `request_id`
//!   across the pool) rather than handed to the local engine.
//! - Each daemon's claimer takes queued jobs, highest priority first, as its
//!   engine has room (`max_claimed`; urgent jobs beyond it), proves each on
//!   its own engine, renews the lease every third of it meanwhile, and
//!   writes the result back. A renewal that fails (the lease ran out, the
//!   job was cancelled) cancels the local work.
//! - Every daemon puts jobs whose lease ran out back in the queue, so a
//!   dead daemon's jobs are proved elsewhere after about one lease.
//! - AwaitProof on any daemon reads the job from the database.
//!
//! The pool claims whole proofs, not partitions: a claim costs 2-4 ms
//! (BENCHMARKS.md), under 0.1 % of a proof, and a proof's partitions share
//! its daemon's resident parameters, compiled R1CS and vanilla proofs, and
//! are assembled and verified there as a whole. A daemon keeps its pipeline
//! full by holding `max_claimed` proofs.

use crate::config::ClusterSection;
use crate::wire::{to_request, to_status};
use cuzk_cluster::{ClaimedJob, JobQueue, JobState, NewJob, Outcome};
use cuzk_core::Priority;
use cuzk_engine::{Engine, JobStatus};
use cuzk_proto::v1 as pb;
use prost::Message;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::Status;

/// A daemon's place in the pool: its handle on the queue and its engine.
pub struct ClusterNode {
    queue: JobQueue,
    engine: Arc<Engine>,
    settings: ClusterSection,
    /// How long finished jobs are kept (`[pipeline] result_ttl_secs`).
    result_ttl: Duration,
    /// Jobs claimed and not yet finished or given back.
    held: AtomicUsize,
    /// Set at shutdown: claim nothing more, give held jobs back.
    stopping: AtomicBool,
}

impl std::fmt::Debug for ClusterNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterNode")
            .field("node", &self.queue.owner())
            .field("held", &self.held.load(Ordering::SeqCst))
            .finish()
    }
}

/// A database error as a gRPC status: the pool is unreachable for now.
fn unavailable(e: cuzk_cluster::ClusterError) -> Status {
    Status::unavailable(format!("cluster queue: {e}"))
}

/// The queue's priority number of a request (its kind's default when unset).
fn queue_priority(request: &cuzk_core::ProofRequest) -> i16 {
    request
        .priority
        .unwrap_or_else(|| request.kind.default_priority()) as i16
}

impl ClusterNode {
    /// Connects to the queue (creating or migrating its schema) as this
    /// daemon's node name.
    pub async fn connect(
        settings: &ClusterSection,
        result_ttl: Duration,
        engine: Arc<Engine>,
    ) -> anyhow::Result<Arc<Self>> {
        let node = match settings.node.as_str() {
            "" => format!(
                "{}-{}",
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_else(|_| "cuzk".into()),
                std::process::id()
            ),
            name => name.to_string(),
        };
        let queue = JobQueue::connect(&settings.database, &settings.schema, &node).await?;
        tracing::info!(node = %node, schema = %settings.schema, "cluster mode: jobs on the shared queue");
        Ok(Arc::new(Self {
            queue,
            engine,
            settings: settings.clone(),
            result_ttl,
            held: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        }))
    }

    fn lease(&self) -> Duration {
        Duration::from_millis(self.settings.lease_ms)
    }

    fn poll(&self) -> Duration {
        Duration::from_millis(self.settings.poll_ms)
    }

    /// Stores a submission; returns its job id (the first job's, for a
    /// repeated `request_id`).
    pub async fn submit(&self, submit: pb::SubmitProofRequest) -> Result<String, Status> {
        let request = to_request(submit.clone())?;
        let job = NewJob {
            request_id: request.request_id.clone(),
            kind: request.kind.name().to_string(),
            priority: queue_priority(&request),
            request: submit.encode_to_vec(),
        };
        let submitted = self.queue.submit(&job).await.map_err(unavailable)?;
        Ok(submitted.job_id().to_string())
    }

    /// Waits for `job_id`'s result, looking at the database with a pause
    /// that grows from a few milliseconds to `poll_ms`; after `timeout`, a
    /// TIMEOUT answer as a single daemon gives.
    pub async fn await_result(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let record = self
                .queue
                .get(job_id)
                .await
                .map_err(unavailable)?
                .ok_or_else(|| Status::not_found(format!("no job with id {job_id}")))?;
            let status = match record.state {
                JobState::Completed => Some(pb::await_proof_response::Status::Completed),
                JobState::Failed => Some(pb::await_proof_response::Status::Failed),
                JobState::Cancelled => Some(pb::await_proof_response::Status::Cancelled),
                JobState::Queued | JobState::Running => None,
            };
            let timed_out = timeout.is_some_and(|limit| started.elapsed() >= limit);
            if status.is_some() || timed_out {
                let status = status.unwrap_or(pb::await_proof_response::Status::Timeout);
                let error_message = match status {
                    pb::await_proof_response::Status::Timeout => format!(
                        "not finished after {} ms",
                        timeout.unwrap_or_default().as_millis()
                    ),
                    _ => record.error.unwrap_or_default(),
                };
                return Ok(pb::AwaitProofResponse {
                    job_id: record.job_id,
                    status: status as i32,
                    proof: record.proof.unwrap_or_default(),
                    error_message,
                    total_ms: started.elapsed().as_millis() as u64,
                    ..Default::default()
                });
            }
            let mut sleep = pause;
            if let Some(limit) = timeout {
                sleep = sleep.min(limit.saturating_sub(started.elapsed()));
            }
            tokio::time::sleep(sleep).await;
            pause = (pause * 2).min(self.poll());
        }
    }

    /// Cancels `job_id` in the pool; the daemon proving it stops at its next
    /// renewal. True when it had not finished.
    pub async fn cancel(&self, job_id: &str) -> Result<bool, Status> {
        self.queue.cancel(job_id).await.map_err(unavailable)
    }

    /// Starts the claimer: it claims jobs while this daemon has room and
    /// requeues expired leases, until [`stop`](Self::stop).
    pub fn spawn_claimer(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let node = Arc::clone(self);
        tokio::spawn(async move { node.claim_loop().await })
    }

    /// Claims nothing more; jobs still held are given back as their local
    /// work ends (cancelled by the engine's shutdown).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Jobs this daemon holds now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    async fn claim_loop(self: Arc<Self>) {
        let mut last_sweep = Instant::now() - self.lease();
        let mut last_expiry = Instant::now();
        while !self.stopping.load(Ordering::SeqCst) {
            // Any daemon gives a dead daemon's jobs back (after their lease).
            if last_sweep.elapsed() >= self.lease() / 3 {
                last_sweep = Instant::now();
                match self.queue.requeue_expired().await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!(jobs = n, "requeued jobs whose daemon's lease ran out"),
                    Err(e) => tracing::warn!(error = %e, "cluster queue unreachable"),
                }
            }
            if last_expiry.elapsed() >= Duration::from_secs(60) {
                last_expiry = Instant::now();
                if let Err(e) = self.queue.expire_finished(self.result_ttl).await {
                    tracing::warn!(error = %e, "expiring finished cluster jobs failed");
                }
            }
            let held = self.held();
            let max = self.settings.max_claimed;
            let claim = if held < max {
                self.queue.claim(self.lease()).await
            } else if held < 2 * max {
                self.queue
                    .claim_at_least(self.lease(), Priority::High as i16)
                    .await
            } else {
                Ok(None)
            };
            match claim {
                Ok(Some(job)) => {
                    self.held.fetch_add(1, Ordering::SeqCst);
                    let node = Arc::clone(&self);
                    tokio::spawn(async move {
                        node.prove_claimed(job).await;
                        node.held.fetch_sub(1, Ordering::SeqCst);
                    });
                    // Look again at once: more may be queued.
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "claiming from the cluster queue failed"),
            }
            tokio::time::sleep(self.poll()).await;
        }
    }

    /// Proves one claimed job on the local engine under its lease, and
    /// records the outcome (or gives the job back).
    async fn prove_claimed(&self, job: ClaimedJob) {
        let id = job.job_id.clone();
        tracing::info!(job = %id, kind = %job.kind, attempts = job.attempts, "claimed");
        let outcome = match self.run_locally(&job).await {
            Some(outcome) => outcome,
            None => return, // lost, cancelled or given back: nothing to record
        };
        // The result is worth retrying for while the lease may still hold
        // (a database restart): after that another daemon has the job.
        let deadline = Instant::now() + self.lease();
        loop {
            match self.queue.finish(&id, &outcome).await {
                Ok(true) => {
                    tracing::info!(job = %id, completed = matches!(outcome, Outcome::Completed(_)), "finished in the pool");
                    return;
                }
                Ok(false) => {
                    tracing::warn!(job = %id, "result dropped: the lease was lost and the job is another daemon's");
                    return;
                }
                Err(e) if Instant::now() < deadline => {
                    tracing::warn!(job = %id, error = %e, "recording the result failed; retrying");
                    tokio::time::sleep(self.poll()).await;
                }
                Err(e) => {
                    tracing::error!(job = %id, error = %e, "could not record the result within the lease");
                    return;
                }
            }
        }
    }

    /// Runs `job` on the engine, renewing its lease; `None` when the local
    /// work was abandoned (lease lost, cancelled in the pool, shutdown).
    async fn run_locally(&self, job: &ClaimedJob) -> Option<Outcome> {
        let request = match pb::SubmitProofRequest::decode(job.request.as_slice())
            .map_err(|e| format!("stored request does not decode: {e}"))
            .and_then(|submit| to_request(submit).map_err(|s| s.message().to_string()))
        {
            Ok(mut request) => {
                // Idempotency is the pool's; the local engine sees each claim once.
                request.request_id.clear();
                request
            }
            Err(e) => return Some(Outcome::Failed(e)),
        };
        let engine = Arc::clone(&self.engine);
        let submitted = tokio::task::spawn_blocking(move || engine.submit(request)).await;
        let local = match submitted {
            Ok(Ok(outcome)) => outcome.job_id,
            Ok(Err(e)) => {
                let status = to_status(e);
                if status.code() == tonic::Code::Unavailable
                    || status.code() == tonic::Code::ResourceExhausted
                {
                    // Not this job's fault: shutting down or full; another
                    // daemon (or this one, later) takes it.
                    let _ = self.queue.release(&job.job_id).await;
                    return None;
                }
                return Some(Outcome::Failed(status.message().to_string()));
            }
            Err(e) => return Some(Outcome::Failed(format!("submission panicked: {e}"))),
        };
        let renew_every = self.lease() / 3;
        loop {
            match self.engine.wait(&local, Some(renew_every)).await {
                Ok(result) => match result.status {
                    JobStatus::Completed => return Some(Outcome::Completed(result.proof)),
                    JobStatus::Failed => return Some(Outcome::Failed(result.error)),
                    JobStatus::Cancelled => {
                        // The engine's shutdown (a pool cancellation is seen
                        // at renewal, below): give the job back at once.
                        if self.queue.release(&job.job_id).await.unwrap_or(false) {
                            tracing::info!(job = %job.job_id, "given back to the pool");
                        }
                        return None;
                    }
                    JobStatus::Timeout => {}
                },
                Err(e) => return Some(Outcome::Failed(format!("local job vanished: {e}"))),
            }
            match self.queue.renew(&job.job_id, self.lease()).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(job = %job.job_id, "lease lost or job cancelled in the pool; stopping local work");
                    let _ = self.engine.cancel(&local);
                    return None;
                }
                // The database is away: keep proving; the lease may outlast
                // the outage, and if not, the result is refused and the job
                // is proved once elsewhere.
                Err(e) => tracing::warn!(job = %job.job_id, error = %e, "lease renewal failed; retrying"),
            }
        }
    }
}
