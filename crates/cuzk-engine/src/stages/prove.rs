//! Stage 2: hand-off -> a backend's `prove_start` -> finisher queue.

use super::finish::FinishItem;
use super::guarded;
use crate::sched::ReadyItem;
use crate::state::{fail, lock, FailureReason, Shared};
use crate::timeline;
use cuzk_core::{BackendError, ProverInput};
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// Where a partition's a, b, c were computed: "device" (the witness path),
/// "host" (from its witness, in the backend) or "synthesis" (synthesised
/// in full).
fn abc_path(t: &cuzk_core::ProveTimings) -> &'static str {
    if t.abc_on_device {
        "device"
    } else if !t.abc.is_zero() {
        "host"
    } else {
        "synthesis"
    }
}

/// Proves partitions on backend `device` until the hand-off closes.
pub(crate) fn worker(shared: &Shared, device: usize, name: &str, finished: mpsc::Sender<FinishItem>) {
    let backend = &shared.devices[device].backend;
    while let Some(ready) = shared.handoff.pop() {
        let ReadyItem {
            job,
            partition,
            data,
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
        let input = ProverInput {
            data,
            params: Arc::clone(&params),
            randomness: job.plan.randomness(partition),
        };
        let pending = guarded("prove_start", || {
            backend.prove_start(input).map_err(|e| match e {
                // The engine is given backends that take every partition
                // (a GPU comes wrapped in a CPU fallback); one that declines
                // here has nowhere else to go.
                BackendError::Declined { backend, reason, .. } => {
                    format!("{backend} declined the partition and no fallback took it: {reason}")
                }
                BackendError::Failed(e) => e.to_string(),
            })
        });
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
                        "lock_wait_ms={} gpu_ms={} upload_ms={} abc={} abc_ms={} classify_ms={} ntt_ms={} h_msm_ms={}",
                        t.lock_wait.as_millis(),
                        t.gpu_region.as_millis(),
                        t.upload.as_millis(),
                        abc_path(t),
                        t.abc.as_millis(),
                        t.classify.as_millis(),
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
                fail(shared, &job, FailureReason::Prover, error);
            }
        }
    }
}
