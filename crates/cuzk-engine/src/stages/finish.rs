//! Stage 3: `finish` (B G2 join, epilogue) -> assemble in partition order
//! -> verify the whole proof -> the job's final status.

use super::guarded;
use crate::job::{Job, JobStatus};
use crate::metrics::FailureReason;
use crate::state::{fail, finalize, Shared};
use crate::sync::lock;
use crate::timeline;
use cuzk_core::{finish, proof_to_bytes, PendingProof};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

/// A partition whose `prove_start` is done.
pub(crate) struct FinishItem {
    pub(crate) job: Arc<Job>,
    pub(crate) partition: usize,
    pub(crate) pending: PendingProof,
    pub(crate) started: Instant,
    pub(crate) worker: String,
}

impl std::fmt::Debug for FinishItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishItem")
            .field("job", &self.job.id)
            .field("partition", &self.partition)
            .finish()
    }
}

/// Finishes partitions until every sender is gone.
pub(crate) fn worker(shared: &Shared, name: &str, items: &Mutex<mpsc::Receiver<FinishItem>>) {
    loop {
        let item = match lock(items).recv() {
            Ok(item) => item,
            Err(_) => return,
        };
        finish_one(shared, name, item);
    }
}

/// Finishes one partition and, with its job's last, assembles, verifies
/// and ends the job. The provers call it themselves for a PoSt partition,
/// which then never queues behind PoRep partitions' finishes.
pub(crate) fn finish_one(shared: &Shared, name: &str, item: FinishItem) {
    let FinishItem {
        job,
        partition,
        pending,
        started,
        worker,
    } = item;
    let finished = Instant::now();
    let outcome = guarded("finish", || finish(pending).map_err(|e| e.to_string()));
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
            fail(shared, &job, FailureReason::Finish, error);
            return;
        }
    };
    if job.is_final() {
        return;
    }
    let Some(proofs) = job.record(partition, proof, started.elapsed()) else {
        return;
    };
    // Whole proof: verify every partition before reporting COMPLETED,
    // unless the plan source accepted the request as an unverifiable
    // benchmark (then COMPLETED says so in its message).
    let unverified = job.plan.unverifiable();
    let verdict = match &unverified {
        Some(reason) => {
            shared.metrics.unverified.inc();
            tracing::warn!(job = %job.id, %reason, "UNVERIFIED: verification skipped (benchmark request)");
            Ok(())
        }
        None => guarded("verification", || {
            let srs = job.srs(&shared.srs, &|| {}).map_err(|e| e.to_string())?;
            job.plan.verify(srs.params(), &proofs).map_err(|e| e.to_string())
        }),
    };
    tracing::debug!(job = %job.id, finisher = name, "assembled");
    match verdict {
        Ok(()) => {
            let bytes = proofs.iter().flat_map(proof_to_bytes).collect();
            let note = unverified.map_or_else(String::new, |reason| format!("UNVERIFIED: {reason}"));
            finalize(shared, &job, JobStatus::Completed, bytes, note);
        }
        Err(error) => fail(shared, &job, FailureReason::Verification, error),
    }
}
