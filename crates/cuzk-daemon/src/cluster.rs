//! Cluster mode (`[cluster] database`): the daemons of a pool share one
//! PostgreSQL job queue (`cuzk-cluster`), so a job outlives the daemon that
//! held it.
//!
//! - Any daemon accepts SubmitProof/Prove: the request is checked as a
//!   single daemon checks it (the engine's admission checks, without
//!   queuing), against the pool's bounds (`max_queued_jobs` counted in the
//!   database, `max_request_bytes`), then stored (idempotent by
//!   `request_id` across the pool) rather than handed to the local engine.
//!   What a daemon would refuse is refused here, not claimed and retried.
//! - Each daemon's claimer takes queued jobs, highest priority first, as its
//!   engine has room (`max_claimed`; urgent jobs beyond it), proves each on
//!   its own engine, renews the lease every third of it meanwhile, and
//!   writes the result back. A renewal that fails (the lease ran out, the
//!   job was cancelled) cancels the local work.
//! - Every daemon puts jobs whose lease ran out back in the queue, so a
//!   dead daemon's jobs are proved elsewhere after about one lease.
//! - A job's attempts are bounded (`max_attempts`): a claim lost with its
//!   work (the lease ran out, the job was given back unfinished) counts,
//!   and the last one fails the job, so a request that crashes daemons is
//!   not passed around the pool for ever. A claim the engine refuses for
//!   good (invalid, unsupported, beyond this daemon's budget) fails the job
//!   at once with the engine's message; one it refuses for now (its queue
//!   full, shutting down) is declined, without spending an attempt.
//! - AwaitProof on any daemon reads the job from the database.
//!
//! The pool claims whole proofs, not partitions: a claim costs 2-4 ms
//! (BENCHMARKS.md), under 0.1 % of a proof, and a proof's partitions share
//! its daemon's resident parameters, compiled R1CS and vanilla proofs, and
//! are assembled and verified there as a whole. A daemon keeps its pipeline
//! full by holding `max_claimed` proofs.

use crate::config::ClusterSection;
use crate::wire::{to_request, to_status};
use cuzk_cluster::{ClaimedJob, ClusterError, JobQueue, JobState, NewJob, Outcome, Released};
use cuzk_core::{Priority, ProofRequest};
use cuzk_engine::{Engine, EngineError, JobStatus};
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
fn unavailable(e: ClusterError) -> Status {
    Status::unavailable(format!("cluster queue: {e}"))
}

/// A stored request as the engine takes it.
fn decode_claimed(job: &ClaimedJob) -> Result<ProofRequest, String> {
    let submit = pb::SubmitProofRequest::decode(job.request.as_slice())
        .map_err(|e| format!("stored request does not decode: {e}"))?;
    let mut request = to_request(submit).map_err(|s| s.message().to_string())?;
    // Idempotency is the pool's; the local engine sees each claim once.
    request.request_id.clear();
    Ok(request)
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

    fn max_attempts(&self) -> i32 {
        i32::try_from(self.settings.max_attempts).unwrap_or(i32::MAX)
    }

    /// Stores a submission once it passed the checks a single daemon makes
    /// and the pool's bounds; returns its job id (the first job's, for a
    /// repeated `request_id`, whatever the pool's load).
    pub async fn submit(&self, submit: pb::SubmitProofRequest) -> Result<String, Status> {
        let request_bytes = submit.encoded_len() as u64;
        let limit = self.settings.request_limit();
        // Encoded before the conversion takes the message, and only when it
        // may be stored: no second copy of an oversized request.
        let encoded = (request_bytes <= limit).then(|| submit.encode_to_vec());
        let request = to_request(submit)?;
        if let Some(existing) = self
            .queue
            .job_of_request(&request.request_id)
            .await
            .map_err(unavailable)?
        {
            return Ok(existing);
        }
        let Some(encoded) = encoded else {
            return Err(Status::resource_exhausted(format!(
                "the request is {request_bytes} bytes, more than the {limit} the pool stores \
                 ([cluster] max_request_bytes)"
            )));
        };
        let job = NewJob {
            request_id: request.request_id.clone(),
            kind: request.kind.name().to_string(),
            priority: queue_priority(&request),
            request: encoded,
        };
        // The engine's admission checks (planning may be slow: off the
        // async threads), so that what a daemon would refuse at its claim
        // is refused now, to this client.
        let engine = Arc::clone(&self.engine);
        tokio::task::spawn_blocking(move || engine.check(&request))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(to_status)?;
        let max_live = i64::try_from(self.settings.max_queued_jobs).unwrap_or(i64::MAX);
        match self.queue.submit_bounded(&job, max_live).await {
            Ok(submitted) => Ok(submitted.job_id().to_string()),
            Err(ClusterError::QueueFull { live, limit }) => Err(Status::resource_exhausted(format!(
                "{live} jobs are queued or running in the pool, the most it accepts ([cluster] max_queued_jobs = {limit})"
            ))),
            Err(e) => Err(unavailable(e)),
        }
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
                .ok_or_else(|| Status::not_found(cuzk_engine::EngineError::not_found(job_id).to_string()))?;
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
                match self.queue.requeue_expired(self.max_attempts()).await {
                    Ok(expired) => {
                        if expired.requeued > 0 {
                            tracing::warn!(
                                jobs = expired.requeued,
                                "requeued jobs whose daemon's lease ran out"
                            );
                        }
                        if expired.failed > 0 {
                            tracing::warn!(
                                jobs = expired.failed,
                                max_attempts = self.max_attempts(),
                                "failed jobs whose daemon's lease ran out on their last attempt"
                            );
                        }
                    }
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
        let request = match decode_claimed(job) {
            Ok(request) => request,
            Err(e) => return Some(Outcome::Failed(e)),
        };
        let engine = Arc::clone(&self.engine);
        let submitted = tokio::task::spawn_blocking(move || engine.submit(request)).await;
        let local = match submitted {
            Ok(Ok(outcome)) => outcome.job_id,
            Ok(Err(e)) => return self.refused(job, e).await,
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
                        match self.queue.release(&job.job_id, self.max_attempts()).await {
                            Ok(Released::Requeued) => {
                                tracing::info!(job = %job.job_id, "given back to the pool")
                            }
                            Ok(Released::Failed) => tracing::warn!(
                                job = %job.job_id,
                                attempts = job.attempts,
                                "given back on its last attempt: failed"
                            ),
                            Ok(Released::NotHeld) => {}
                            Err(e) => {
                                tracing::warn!(job = %job.job_id, error = %e, "giving the job back failed; its lease will run out")
                            }
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

    /// What becomes of a claimed job the local engine refused: a refusal
    /// no daemon sized like this one overcomes fails it at once; one that
    /// passes (shutting down, the engine's queue full) declines it, without
    /// spending an attempt, for another daemon or this one later.
    async fn refused(&self, job: &ClaimedJob, error: EngineError) -> Option<Outcome> {
        let for_good = match error {
            EngineError::ShuttingDown => None,
            // The engine refuses both a request beyond its budget and any
            // request while its queue is full; the check without queuing
            // tells them apart (planning again, but only on this rare path).
            EngineError::ResourceExhausted(full) => match self.check_claimed(job).await {
                Ok(()) => {
                    tracing::info!(job = %job.job_id, reason = %full, "engine full: declining the job for now");
                    // Held a moment first, so that the claimer does not take
                    // it straight back while the engine is still full.
                    tokio::time::sleep(self.poll().min(self.lease() / 3)).await;
                    None
                }
                Err(EngineError::ShuttingDown) => None,
                Err(refusal) => Some(refusal),
            },
            refusal => Some(refusal),
        };
        if let Some(refusal) = for_good {
            return Some(Outcome::Failed(to_status(refusal).message().to_string()));
        }
        if let Err(e) = self.queue.decline(&job.job_id).await {
            tracing::warn!(job = %job.job_id, error = %e, "declining the job failed; its lease will run out");
        }
        None
    }

    /// The engine's admission checks of a claimed job, without queuing it.
    async fn check_claimed(&self, job: &ClaimedJob) -> Result<(), EngineError> {
        let request = decode_claimed(job).map_err(EngineError::InvalidArgument)?;
        let engine = Arc::clone(&self.engine);
        tokio::task::spawn_blocking(move || engine.check(&request))
            .await
            .map_err(|e| EngineError::Internal(format!("checking the request panicked: {e}")))?
    }
}
