//! Stage 2: hand-off -> a backend's `prove_start` -> finisher queue.

use super::finish::{finish_one, FinishItem};
use super::guarded;
use crate::job::Job;
use crate::metrics::FailureReason;
use crate::sched::{Lane, Rank, ReadyItem, WorkItem, URGENT};
use crate::state::{fail, Shared};
use crate::sync::lock;
use crate::timeline;
use cuzk_core::{BackendError, ProverInput};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How many times one partition may be sent to another device after a
/// device failed it.
const REQUEUES_PER_PARTITION: u32 = 2;

/// Proves the partitions `lane` takes on backend `device` until the
/// hand-off closes; a quarantined device takes none until its quarantine
/// ends. A PoSt partition is finished on this thread, not queued behind
/// PoRep partitions' finishes.
pub(crate) fn worker(
    shared: &Shared,
    device: usize,
    lane: Lane,
    name: &str,
    finished: mpsc::Sender<FinishItem>,
) {
    let backend = &shared.devices[device].backend;
    loop {
        if let Some(left) = shared.devices[device].quarantine_left() {
            if shared.handoff.is_closed() {
                return;
            }
            // Short naps: shutdown is not held up by a quarantine.
            std::thread::sleep(left.min(Duration::from_millis(100)));
            continue;
        }
        let Some(ready) = shared.handoff.pop(lane) else {
            return;
        };
        if shared.devices[device].quarantine_left().is_some() {
            // Quarantined while this worker waited: the partition goes back
            // for the other devices.
            if shared.handoff.push(ready).is_err() {
                return;
            }
            continue;
        }
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
            priority: job.priority,
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
                timeline::event_with("prover_gpu_end", &job.id, partition, name, &t.device_fields());
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
                let urgent = job.priority >= URGENT;
                let item = FinishItem {
                    job,
                    partition,
                    pending,
                    started,
                    worker: name.to_string(),
                };
                if urgent {
                    finish_one(shared, name, item);
                } else if finished.send(item).is_err() {
                    return;
                }
            }
            Err(e) => {
                let error = format!("partition {partition} prove failed: {e}");
                if !send_elsewhere(shared, device, &job, partition, &error) {
                    fail(shared, &job, FailureReason::Prover, error);
                }
            }
        }
    }
}

/// After `device` failed `partition` (a device error, out of memory, a
/// panic): when another device is in service, quarantines this one and
/// sends the partition back to the dispatcher, to be synthesised again for
/// another device (its data went to the failed call). False when there is
/// no other device, or the partition was sent elsewhere too often: the job
/// then fails.
fn send_elsewhere(shared: &Shared, device: usize, job: &Arc<Job>, partition: usize, error: &str) -> bool {
    let failed = &shared.devices[device];
    failed.failures.fetch_add(1, Ordering::SeqCst);
    shared
        .metrics
        .device_failures
        .with_label_values(&[&device.to_string()])
        .inc();
    let others_in_service = shared
        .devices
        .iter()
        .enumerate()
        .any(|(i, d)| i != device && d.quarantine_left().is_none());
    if !others_in_service || !job.requeue(partition, REQUEUES_PER_PARTITION) {
        return false;
    }
    let quarantine = shared.config.device_quarantine;
    *lock(&failed.quarantined_until) = Some(Instant::now() + quarantine);
    tracing::warn!(
        device,
        backend = %failed.backend.name(),
        job = %job.id,
        partition,
        error,
        quarantine_secs = quarantine.as_secs(),
        "device failed a partition: no work for it during the quarantine; the partition goes to another device"
    );
    shared.dispatch.push(WorkItem {
        rank: Rank::of(job, partition),
        job: Arc::clone(job),
        partition,
    });
    true
}
