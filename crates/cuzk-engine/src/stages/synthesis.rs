//! Stage 1: dispatcher -> synthesis -> parameters -> hand-off.

use super::guarded;
use crate::metrics::FailureReason;
use crate::sched::{Lane, ReadyItem};
use crate::state::{fail, Shared};
use crate::timeline;
use cuzk_core::{cores, PartitionData};
use std::sync::Arc;
use std::time::Instant;

/// Takes the partitions `lane` takes from the dispatcher (in priority
/// order, memory granted) until it closes.
pub(crate) fn worker(shared: &Shared, lane: Lane, name: &str) {
    while let Some((item, mut permit)) = shared.dispatch.next(lane) {
        let job = item.job;
        if job.is_final() {
            continue;
        }
        job.mark_picked();
        // In a sequential slot: the synthesis computes on this thread only
        // while it holds one (its parallel passes lend it to the pool), so
        // workers and pool together stay within the cores.
        let (synthesized, took) = cores::in_slot(&shared.slots, job.priority, || {
            timeline::event("synthesis_start", &job.id, item.partition, name);
            let started = Instant::now();
            let synthesized = guarded("synthesis", || {
                if job.witness_only {
                    job.plan.synthesize_witness(item.partition)
                } else {
                    job.plan.synthesize(item.partition).map(PartitionData::Evaluated)
                }
                .map_err(|e| e.to_string())
            });
            (synthesized, started.elapsed())
        });
        timeline::event("synthesis_end", &job.id, item.partition, name);
        shared
            .metrics
            .phase_seconds
            .with_label_values(&["synthesis"])
            .observe(took.as_secs_f64());
        job.add_synthesis(took);
        let data = match synthesized {
            Ok(data) => data,
            Err(e) => {
                let error = format!("partition {} synthesis failed: {e}", item.partition);
                fail(shared, &job, FailureReason::Synthesis, error);
                continue;
            }
        };
        // The memory budget is only as good as the plans' estimates: a
        // partition that holds more than it was granted fails its job
        // rather than overrun the budget (a plan bug, reported as such).
        let held = data.heap_bytes();
        if held > permit.bytes() {
            let error = format!(
                "partition {} holds {} MiB after synthesis, more than the {} MiB its plan budgeted \
                 (a wrong estimate in the {} plan)",
                item.partition,
                held >> 20,
                permit.bytes() >> 20,
                job.kind.name()
            );
            fail(shared, &job, FailureReason::Budget, error);
            continue;
        }
        // A witness waiting for a device holds only this (kept as bits, a
        // few percent of its estimate): the rest goes to the next
        // partitions. An evaluated partition keeps its grant, which also
        // covers the copies its MSMs make. (A witness the device declines
        // is expanded on the host outside the budget, as its grant never
        // covered a, b and c.)
        if matches!(data, PartitionData::Witness(_)) {
            permit.shrink_to(held);
        }
        // Resident, or (a job's first partition, taken while they load)
        // waited for here.
        let srs = match job.srs(&shared.srs, &|| {}) {
            Ok(srs) => srs,
            Err(e) => {
                fail(shared, &job, FailureReason::Parameters, e.to_string());
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
            data,
            params: Arc::clone(srs.params()),
            permit,
            queued_at: Instant::now(),
        };
        if shared.handoff.push(ready).is_err() {
            return; // closed: shutting down
        }
    }
}
