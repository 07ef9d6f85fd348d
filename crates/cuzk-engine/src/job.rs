//! One proof request inside the engine, from submission to final status.

use crate::srs::{SrsHandle, SrsManager};
use crate::sync::lock;
use crate::EngineError;
use cuzk_core::ProofPlan;
use cuzk_core::{Bls12, Proof};
use cuzk_core::{Priority, ProofKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Final status of a job (the `cuzk.v1` AwaitProofResponse statuses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Proof made and verified.
    Completed,
    /// Something failed; see the error.
    Failed,
    /// Cancelled by a client or by shutdown.
    Cancelled,
    /// The await timed out; the job goes on.
    Timeout,
}

/// What an await returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobResult {
    /// The job.
    pub job_id: String,
    /// How it ended (or `Timeout`).
    pub status: JobStatus,
    /// Concatenated 192-byte proofs, in partition order, when completed.
    pub proof: Vec<u8>,
    /// Why it failed or was cancelled.
    pub error: String,
    /// Submission until its first partition was picked up.
    pub queue_wait: Duration,
    /// Waiting for the parameters to load.
    pub srs_load: Duration,
    /// Synthesis, summed over partitions.
    pub synthesis: Duration,
    /// Prover time (prove_start + finish), summed over partitions.
    pub prove: Duration,
    /// Submission until the final status.
    pub total: Duration,
}

#[derive(Debug, Default)]
struct Progress {
    proofs: Vec<Option<Proof<Bls12>>>,
    done: usize,
    first_pick: Option<Instant>,
    synthesis: Duration,
    prove: Duration,
    srs_load: Duration,
    srs: Option<SrsHandle>,
    srs_error: Option<String>,
    /// Times each partition was sent back for another device.
    requeues: std::collections::HashMap<usize, u32>,
}

/// A job's identity, plan and progress.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) seq: u64,
    pub(crate) kind: ProofKind,
    pub(crate) priority: Priority,
    pub(crate) plan: Box<dyn ProofPlan>,
    pub(crate) partition_bytes: u64,
    /// Partitions are synthesised as their witness only (see
    /// `EngineConfig::witness_only`), and budgeted at its size.
    pub(crate) witness_only: bool,
    pub(crate) submitted: Instant,
    progress: Mutex<Progress>,
    /// Serialises the SRS acquisition of this job's partitions.
    srs_lock: Mutex<()>,
    /// The job's parameters are sure to come without more memory: their
    /// load runs with its memory reserved (see `SrsManager::acquire`).
    parameters_coming: AtomicBool,
    /// A partition was taken to be synthesised before the parameters came.
    early_taken: AtomicBool,
    is_final: AtomicBool,
    /// A client has been given the final result (await or result call).
    pub(crate) collected: AtomicBool,
    result: watch::Sender<Option<JobResult>>,
}

impl Job {
    pub(crate) fn new(
        id: String,
        seq: u64,
        kind: ProofKind,
        priority: Priority,
        plan: Box<dyn ProofPlan>,
        witness_only: bool,
    ) -> Self {
        let partitions = plan.partitions();
        let witness_bytes = witness_only.then(|| plan.witness_bytes()).flatten();
        Self {
            id,
            seq,
            kind,
            priority,
            partition_bytes: witness_bytes.unwrap_or_else(|| plan.partition_bytes()),
            witness_only: witness_bytes.is_some(),
            plan,
            submitted: Instant::now(),
            progress: Mutex::new(Progress {
                proofs: vec![None; partitions],
                ..Progress::default()
            }),
            srs_lock: Mutex::new(()),
            parameters_coming: AtomicBool::new(false),
            early_taken: AtomicBool::new(false),
            is_final: AtomicBool::new(false),
            collected: AtomicBool::new(false),
            result: watch::channel(None).0,
        }
    }

    pub(crate) fn is_final(&self) -> bool {
        self.is_final.load(Ordering::SeqCst)
    }

    /// Whether any partition has been picked up.
    pub(crate) fn is_started(&self) -> bool {
        lock(&self.progress).first_pick.is_some()
    }

    /// Counts one more attempt of `partition` on another device; false when
    /// it already had `limit`.
    pub(crate) fn requeue(&self, partition: usize, limit: u32) -> bool {
        let mut progress = lock(&self.progress);
        let count = progress.requeues.entry(partition).or_insert(0);
        if *count >= limit {
            return false;
        }
        *count += 1;
        true
    }

    pub(crate) fn mark_picked(&self) {
        let mut progress = lock(&self.progress);
        progress.first_pick.get_or_insert_with(Instant::now);
    }

    /// Whether the job holds its parameters (its partitions may be
    /// synthesised).
    pub(crate) fn has_parameters(&self) -> bool {
        lock(&self.progress).srs.is_some()
    }

    /// Whether one partition may be synthesised before the parameters are
    /// resident: the first, once their load runs with its memory
    /// reserved, so that a circuit's first witness (seconds for a PoSt
    /// partition) overlaps the load instead of following it. One only:
    /// its synthesis worker then waits for the load, and the others stay
    /// free for jobs whose parameters are resident.
    pub(crate) fn may_start_early(&self) -> bool {
        self.parameters_coming.load(Ordering::SeqCst) && !self.early_taken.load(Ordering::SeqCst)
    }

    /// Counts the partition taken before the parameters came.
    pub(crate) fn take_early(&self) {
        self.early_taken.store(true, Ordering::SeqCst);
    }

    /// The job's parameters, acquired once: loaded (waiting for memory
    /// while the job is live) if they are not resident. `coming` is told
    /// when their memory is reserved and their load runs (this job's or
    /// another's, a preload's).
    pub(crate) fn srs(&self, manager: &SrsManager, coming: &dyn Fn()) -> Result<SrsHandle, EngineError> {
        let _one_at_a_time = lock(&self.srs_lock);
        {
            let progress = lock(&self.progress);
            if let Some(handle) = &progress.srs {
                return Ok(handle.clone());
            }
            if let Some(error) = &progress.srs_error {
                return Err(EngineError::Srs(error.clone()));
            }
        }
        // A job whose first partition started early holds memory: it does
        // not wait for more to load its parameters (they were to come
        // without it; that load failed), it fails instead of freezing.
        let keep_waiting = || !self.is_final() && !self.early_taken.load(Ordering::SeqCst);
        let acquired = manager.acquire(&self.plan.circuit_id(), &keep_waiting, &|sure| {
            self.parameters_coming.store(sure, Ordering::SeqCst);
            if sure {
                coming();
            }
        });
        let mut progress = lock(&self.progress);
        match acquired {
            Ok(handle) => {
                progress.srs_load = handle.load_time;
                if !self.is_final() {
                    progress.srs = Some(handle.clone());
                }
                Ok(handle)
            }
            Err(e) => {
                progress.srs_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    pub(crate) fn add_synthesis(&self, time: Duration) {
        lock(&self.progress).synthesis += time;
    }

    /// Records partition `index`'s proof; returns all proofs once the last
    /// one arrives.
    pub(crate) fn record(
        &self,
        index: usize,
        proof: Proof<Bls12>,
        prove: Duration,
    ) -> Option<Vec<Proof<Bls12>>> {
        let mut progress = lock(&self.progress);
        progress.prove += prove;
        if progress.proofs[index].replace(proof).is_none() {
            progress.done += 1;
        }
        (progress.done == progress.proofs.len()).then(|| progress.proofs.iter().flatten().cloned().collect())
    }

    /// Sets the final status once; later calls return false and change
    /// nothing. Drops the job's hold on its parameters. `before_publish`
    /// runs after the status is fixed and before any waiter sees it, so
    /// engine-wide counters are already updated when an await returns.
    pub(crate) fn finalize(
        &self,
        status: JobStatus,
        proof: Vec<u8>,
        error: String,
        before_publish: impl FnOnce(),
    ) -> bool {
        let mut progress = lock(&self.progress);
        if self.is_final.swap(true, Ordering::SeqCst) {
            return false;
        }
        progress.srs = None;
        let result = JobResult {
            job_id: self.id.clone(),
            status,
            proof,
            error,
            queue_wait: progress
                .first_pick
                .map(|t| t - self.submitted)
                .unwrap_or_else(|| self.submitted.elapsed()),
            srs_load: progress.srs_load,
            synthesis: progress.synthesis,
            prove: progress.prove,
            total: self.submitted.elapsed(),
        };
        progress.proofs.clear();
        drop(progress);
        before_publish();
        self.result.send_replace(Some(result));
        true
    }

    /// A receiver that sees the final result.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Option<JobResult>> {
        self.result.subscribe()
    }

    /// The final result, if there is one.
    pub(crate) fn result(&self) -> Option<JobResult> {
        self.result.borrow().clone()
    }
}
